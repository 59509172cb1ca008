import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { newId } from '../../src/domain/ids.js';
import { hashSecret, newSecretFor } from '../../src/domain/secrets.js';
import { generateApiKey } from '../../test/helpers/server-process.js';
import { bulkSeedCredentials } from '../seed.js';
import { median } from '../stats.js';

/**
 * SQLite's own cost per credential write, the way burrow commits (one autocommit transaction per
 * INSERT/UPDATE: WAL frames for every page it touched, the wal-index, file locks) against
 * several writes of concurrent requests committed in one transaction, as a write batcher in the
 * repository layer would. Same file settings as the server (WAL, synchronous=NORMAL); no
 * fdatasync here (the server's WalSyncBarrier already shares those).
 *
 *   node --import tsx bench/experiments/sqlite-writes.ts
 */
const dir = mkdtempSync(join(tmpdir(), 'burrow-exp-'));
try {
  const url = `sqlite:${join(dir, 'exp.db')}`;
  const { accountId, ownerId, sampleIds: ids } = await bulkSeedCredentials(url, generateApiKey(), 1000, 1000, () => {});
  const db = new Database(join(dir, 'exp.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  const insert = db.prepare(
    'insert into "credentials" ("id", "account_id", "owner_id", "description", "metadata", "acl", "token_hash", "created_at") values (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const update = db.prepare('update "credentials" set "description" = ? where "id" = ? and "account_id" = ? returning "id", "account_id", "owner_id", "description", "metadata", "acl", "created_at"');
  // Rows are made before the clock starts: only SQLite is timed.
  const made: unknown[][] = [];
  const row = () => made.pop()!;
  const makeRows = (count: number) => {
    for (let i = 0; i < count; i++) {
      const { id, createdAt } = newId('cr');
      made.push([id, accountId, ownerId, 'bench create', '', '["bind:*.example.com"]', hashSecret(newSecretFor(id)), createdAt]);
    }
  };
  let n = 0;
  const variants: { name: string; rowsPerCall: number; run: () => void }[] = [
    { name: 'INSERT, one autocommit transaction per row (as now)', rowsPerCall: 1, run: () => insert.run(row()) },
    { name: 'INSERT, 8 rows per transaction', rowsPerCall: 8, run: db.transaction(() => { for (let i = 0; i < 8; i++) insert.run(row()); }) },
    { name: 'UPDATE … RETURNING, one per transaction (as now)', rowsPerCall: 1, run: () => update.all(`u${n++}`, ids[n % ids.length], accountId) },
    { name: 'UPDATE … RETURNING, 8 per transaction', rowsPerCall: 8, run: db.transaction(() => { for (let i = 0; i < 8; i++) update.all(`u${n++}`, ids[n % ids.length], accountId); }) },
  ];
  const rows = 8000;
  const results = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  for (let repetition = 0; repetition < 7; repetition++) {
    for (const v of variants) {
      if (v.name.startsWith('INSERT')) makeRows(rows);
      const start = process.hrtime.bigint();
      for (let i = 0; i < rows / v.rowsPerCall; i++) v.run();
      results.get(v.name)!.push(Number(process.hrtime.bigint() - start) / 1000 / rows);
    }
  }
  process.stdout.write('\nSQLite write cost per row (µs, median of 7 × 8,000 rows)\n');
  for (const v of variants) process.stdout.write(`  ${v.name.padEnd(56)} ${median(results.get(v.name)!).toFixed(1).padStart(6)} µs/row\n`);
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

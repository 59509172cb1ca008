import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { param } from '../../src/storage/prepared.js';
import { openSqlite } from '../../src/storage/sqlite.js';
import { SqliteReadQueue } from '../../src/storage/sqlite-reads.js';
import { SqliteWriteQueue } from '../../src/storage/sqlite-writes.js';

const dir = mkdtempSync(join(tmpdir(), 'burrow-batches-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function database() {
  const db = new Database(join(dir, `${Math.random().toString(36).slice(2)}.db`));
  db.pragma('journal_mode = WAL');
  db.exec('create table t (id integer primary key, v text not null unique)');
  return db;
}

describe('SQLite group commit', () => {
  it('commits the writes of one moment together, each answered after one WAL flush', async () => {
    const db = database();
    let flushes = 0;
    const queue = new SqliteWriteQueue(db, async () => void flushes++);
    const insert = db.prepare('insert into t (v) values (?)');
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => queue.enqueue(() => insert.run(`v${i}`).changes)));
    assert.deepEqual(results, Array(50).fill(1));
    assert.equal(flushes, 1);
    assert.equal((db.prepare('select count(*) as n from t').get() as { n: number }).n, 50);
  });

  it('a failing write fails alone: the others of its batch are kept', async () => {
    const db = database();
    const queue = new SqliteWriteQueue(db, async () => {});
    const insert = db.prepare('insert into t (v) values (?)');
    const outcomes = await Promise.allSettled(['a', 'b', 'a', 'c'].map((v) => queue.enqueue(() => insert.run(v).changes)));
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(db.prepare('select v from t order by v').all(), [{ v: 'a' }, { v: 'b' }, { v: 'c' }]);
  });

  it('answers nothing before the WAL flush, and fails every write when the flush fails', async () => {
    const db = database();
    let release!: () => void;
    const flushed = new Promise<void>((resolve) => (release = resolve));
    const queue = new SqliteWriteQueue(db, () => flushed);
    let answered = false;
    const write = queue.enqueue(() => db.prepare('insert into t (v) values (?)').run('x')).then(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(answered, false, 'committed but not yet on disk: not answered');
    release();
    await write;
    assert.equal(answered, true);

    const failing = new SqliteWriteQueue(db, () => Promise.reject(new Error('disk gone')));
    await assert.rejects(failing.enqueue(() => db.prepare('insert into t (v) values (?)').run('y')), /disk gone/);
  });
});

describe('SQLite read batches', () => {
  it('answer each read, errors included, and see committed writes', async () => {
    const db = database();
    db.prepare('insert into t (v) values (?)').run('seen');
    const queue = new SqliteReadQueue(db);
    const select = db.prepare('select v from t where v = ?');
    const [hit, miss, broken] = await Promise.allSettled([
      queue.enqueue(() => select.get('seen')),
      queue.enqueue(() => select.get('nope')),
      queue.enqueue(() => db.prepare('select nonsense from t').get()),
    ]);
    assert.deepEqual((hit as PromiseFulfilledResult<unknown>).value, { v: 'seen' });
    assert.equal((miss as PromiseFulfilledResult<unknown>).value, undefined);
    assert.equal(broken.status, 'rejected');
    assert.equal(db.inTransaction, false, 'the read transaction is closed');
  });
});

describe('SQLite statement metrics', () => {
  it('observe each write once, even when its batch is rolled back and it runs again alone', async () => {
    const store = openSqlite(join(dir, 'observed.db'));
    try {
      await store.db.schema.createTable('t').addColumn('v', 'text', (c) => c.notNull().unique()).execute();
      const seen: { kind: string; failed: boolean }[] = [];
      store.observeQueries((kind, _ms, failed) => seen.push({ kind, failed }));
      // A table of the test's own, outside the app's schema types.
      const db = store.db as unknown as Kysely<{ t: { v: string } }>;
      const insert = store.prepare<unknown>(db.insertInto('t').values({ v: param('v') }));
      const select = store.prepare<{ v: string }>(db.selectFrom('t').select('v').where('v', '=', param('v')));
      const outcomes = await Promise.allSettled(['a', 'b', 'a'].map((v) => insert.run({ v })));
      assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected']);
      assert.deepEqual((await select.first({ v: 'b' }))?.v, 'b');
      assert.deepEqual(seen, [
        { kind: 'insert', failed: false },
        { kind: 'insert', failed: false },
        { kind: 'insert', failed: true },
        { kind: 'select', failed: false },
      ]);
    } finally {
      await store.close();
    }
  });
});

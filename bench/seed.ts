import { sql } from 'kysely';
import { api } from '../test/helpers/server-process.js';
import { AccountService } from '../src/domain/accounts/service.js';
import { newId } from '../src/domain/ids.js';
import { hashSecret, newSecretFor } from '../src/domain/secrets.js';
import { openStore } from '../src/storage/db.js';
import { migrateToLatest } from '../src/storage/migrate.js';
import { SqlAccountRepository } from '../src/storage/repositories/accounts.js';
import type { CredentialsTable } from '../src/storage/schema.js';

/** Every seeded credential looks the same, so answers are the same size at 1k and at 1M. */
export const SEED_CREDENTIAL = {
  description: 'bench credential',
  metadata: '{"team":"bench"}',
  acl: ['bind:*.example.com', 'bind:bench.example.net'],
} as const;

interface Target {
  baseUrl: string;
  apiKey: string;
}

async function expectOk<T>(what: string, promise: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const response = await promise;
  if (response.status < 200 || response.status > 299) throw new Error(`${what} answered ${response.status}: ${response.text}`);
  return response.body;
}

/** Creates `count` credentials through POST /credentials, `concurrency` at a time; returns their ids in creation order. */
export async function seedCredentialsOverHttp(server: Target, count: number, concurrency = 16): Promise<string[]> {
  const ids = new Array<string>(count);
  let next = 0;
  const workers = Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const index = next++;
      const body = await expectOk('POST /credentials', api<{ id: string }>(server, 'POST', '/credentials', { body: SEED_CREDENTIAL }));
      ids[index] = body.id;
    }
  });
  await Promise.all(workers);
  return ids;
}

/** A valid traffic policy of `rules` rules for on_tcp_connect: expressions, log, restrict-ips, deny. */
export function policyDocument(rules: number): string {
  const lines = ['on_tcp_connect:'];
  for (let i = 1; i <= rules; i++) {
    lines.push(`  - name: bench rule ${i}`, '    expressions:');
    if (i % 2 === 1) {
      lines.push(
        `      - "conn.geo.country_code in ['X${i % 10}', 'Y${i % 10}'] && conn.server_port == ${4000 + i}"`,
        '    actions:',
        '      - type: log',
        '        config:',
        '          metadata:',
        `            rule: ${i}`,
        '            country: "${conn.geo.country_code}"',
        '            client: "${conn.client_ip}:${conn.client_port}"',
        '      - type: deny',
      );
    } else {
      lines.push(
        `      - "inCidrRange(conn.client_ip, '10.${i}.0.0/16') || endpoint.port == ${8000 + i}"`,
        '    actions:',
        '      - type: restrict-ips',
        '        config:',
        '          allow:',
        `            - 192.0.${i}.0/24`,
        `            - 2001:db8:${i}::/48`,
        '          deny:',
        `            - 192.0.${i}.66/32`,
      );
    }
  }
  return lines.join('\n') + '\n';
}

/** A TLS edge carrying a `rules`-rule traffic policy module; returns the edge id. */
export async function seedEdgeWithPolicy(server: Target, rules: number): Promise<string> {
  const edge = await expectOk('POST /edges/tls', api<{ id: string }>(server, 'POST', '/edges/tls', { body: { description: 'bench edge' } }));
  await expectOk(
    'PUT traffic_policy',
    api(server, 'PUT', `/edges/tls/${edge.id}/traffic_policy`, { body: { enabled: true, value: policyDocument(rules) } }),
  );
  return edge.id;
}

export interface BulkSeed {
  accountId: string;
  ownerId: string;
  /** `sampleSize` ids drawn uniformly from all rows, in random order. */
  sampleIds: string[];
  seconds: number;
}

/**
 * Builds a database of `rows` credentials without the server: migrations, the same bootstrap
 * `burrow serve` performs (the admin key is `apiKey`), then multi-row INSERTs through the
 * storage layer's Kysely instance (1,000 rows a statement, so one cached prepared statement;
 * 100,000 rows a transaction; synchronous=OFF while seeding only). Ids are real KSUIDs from
 * `newId`, tokens real secrets hashed as the service hashes them.
 */
export async function bulkSeedCredentials(
  databaseUrl: string,
  apiKey: string,
  rows: number,
  sampleSize: number,
  onProgress: (done: number) => void,
): Promise<BulkSeed> {
  const started = performance.now();
  const store = openStore(databaseUrl);
  try {
    await migrateToLatest(store);
    const bootstrap = await new AccountService(new SqlAccountRepository(store)).bootstrap(apiKey);
    if (!bootstrap || !('account' in bootstrap)) throw new Error(`${databaseUrl} was not empty`);
    const accountId = bootstrap.account.id;
    const ownerId = bootstrap.admin.id;
    await sql`pragma synchronous = off`.execute(store.db);

    const sampled = sampleIndices(rows, sampleSize);
    const sampleIds: string[] = [];
    const acl = JSON.stringify(SEED_CREDENTIAL.acl);
    const rowsPerStatement = 1000; // 8 columns: 8,000 bound values, well under SQLite's 32,766
    const rowsPerTransaction = 100_000;
    let done = 0;
    while (done < rows) {
      const end = Math.min(rows, done + rowsPerTransaction);
      await store.db.transaction().execute(async (trx) => {
        while (done < end) {
          const batch: CredentialsTable[] = [];
          const stop = Math.min(end, done + rowsPerStatement);
          for (let i = done; i < stop; i++) {
            const { id, createdAt } = newId('cr');
            if (sampled.has(i)) sampleIds.push(id);
            batch.push({
              id,
              account_id: accountId,
              owner_id: ownerId,
              description: SEED_CREDENTIAL.description,
              metadata: SEED_CREDENTIAL.metadata,
              acl,
              token_hash: hashSecret(newSecretFor(id)),
              created_at: createdAt,
            });
          }
          await trx.insertInto('credentials').values(batch).execute();
          done = stop;
        }
      });
      onProgress(done);
    }
    // Leave a clean file: everything in the main database, an empty WAL.
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(store.db);
    shuffle(sampleIds);
    return { accountId, ownerId, sampleIds, seconds: (performance.now() - started) / 1000 };
  } finally {
    await store.close();
  }
}

function sampleIndices(rows: number, size: number): Set<number> {
  const chosen = new Set<number>();
  const target = Math.min(size, rows);
  while (chosen.size < target) chosen.add(Math.floor(Math.random() * rows));
  return chosen;
}

function shuffle<T>(items: T[]): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

// @test-pass postgres
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { api, cleanupProcesses, generateApiKey, runCli, startServer, type ApiResponse, type ServerProcess } from '../helpers/server-process.js';

/**
 * Scaling out (issue 4): two burrow processes on one PostgreSQL database behave as one service.
 * Runs when TEST_DATABASE_URL names a PostgreSQL database; each run gets its own schema.
 */
const postgres = process.env.TEST_DATABASE_URL;

describe('two instances on one PostgreSQL database', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  const schema = `mi_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let databaseUrl: string;
  let one: ServerProcess;
  let two: ServerProcess;

  before(async () => {
    const url = new URL(postgres!);
    url.searchParams.set('schema', schema);
    databaseUrl = url.toString();
    const key = generateApiKey();
    // Started at the same moment: migrations and bootstrap must not collide.
    const env = { RATE_LIMIT_PER_MINUTE: '0' };
    [one, two] = await Promise.all([
      startServer({ databaseUrl, bootstrapApiKey: key, env }),
      startServer({ databaseUrl, bootstrapApiKey: key, env }),
    ]);
  });

  after(async () => {
    await cleanupProcesses();
    const client = new pg.Client({ connectionString: postgres });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
  });

  it('migrated and bootstrapped the database exactly once', async () => {
    const client = new pg.Client({ connectionString: postgres });
    await client.connect();
    try {
      const accounts = await client.query(`select count(*)::int as n from ${schema}.accounts`);
      const migrations = await client.query(`select count(*)::int as n from ${schema}.kysely_migration`);
      assert.equal(accounts.rows[0].n, 1);
      assert.ok(migrations.rows[0].n >= 3);
    } finally {
      await client.end();
    }
    assert.equal([one.bootstrap, two.bootstrap].filter(Boolean).length, 1, 'one of the two bootstrapped');
  });

  it('reads through one instance what was written through the other, at once', async () => {
    for (let i = 0; i < 10; i++) {
      const created = await api(one, 'POST', '/credentials', { body: { description: `w${i}` } });
      assert.equal(created.status, 201);
      const read = await api(two, 'GET', `/credentials/${created.body.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.description, `w${i}`);
      const edge = await api(two, 'POST', '/edges/tls', { body: { traffic_policy: { value: '' } } });
      assert.equal((await api(one, 'GET', `/edges/tls/${edge.body.id}/traffic_policy`)).status, 200);
    }
  });

  it('concurrent creates on both never collide, and both list them all in order', async () => {
    const made = await Promise.all(
      Array.from({ length: 120 }, (_, i) => api(i % 2 ? one : two, 'POST', '/credentials', { body: { metadata: `c${i}` } })),
    );
    assert.ok(made.every((r) => r.status === 201));
    const ids = made.map((r) => r.body.id as string);
    assert.equal(new Set(ids).size, ids.length);
    const seen: string[] = [];
    let path: string | null = '/credentials?limit=50';
    while (path) {
      const page: ApiResponse<{ credentials: { id: string }[]; next_page_uri: string | null }> = await api(seen.length % 100 ? one : two, 'GET', path);
      seen.push(...page.body.credentials.map((c) => c.id));
      path = page.body.next_page_uri ? new URL(page.body.next_page_uri).pathname + new URL(page.body.next_page_uri).search : null;
    }
    for (const id of ids) assert.ok(seen.includes(id), `${id} is listed`);
    assert.deepEqual([...seen].sort().reverse(), seen, 'newest first across instances');
    assert.equal(new Set(seen).size, seen.length);
  });

  it('concurrent PATCHes of one credential from both instances: no torn record, no lost field', async () => {
    const id = (await api(one, 'POST', '/credentials', {})).body.id as string;
    // Whole-record writes from both sides: the result is exactly one of them.
    const whole = await Promise.all(
      Array.from({ length: 60 }, (_, i) => api(i % 2 ? one : two, 'PATCH', `/credentials/${id}`, { body: { description: `v${i}`, metadata: `v${i}`, acl: [`bind:v${i}.example.com`] } })),
    );
    assert.ok(whole.every((r) => r.status === 200));
    for (const r of whole) assert.equal(r.body.description, r.body.metadata, 'each answer is one whole write');
    const final = (await api(two, 'GET', `/credentials/${id}`)).body;
    assert.equal(final.description, final.metadata);
    assert.deepEqual(final.acl, [`bind:${final.description}.example.com`]);

    // Disjoint fields written concurrently from both sides: neither update is lost.
    await Promise.all([
      ...Array.from({ length: 30 }, (_, i) => api(one, 'PATCH', `/credentials/${id}`, { body: { description: `d${i}` } })),
      ...Array.from({ length: 30 }, (_, i) => api(two, 'PATCH', `/credentials/${id}`, { body: { metadata: `m${i}` } })),
    ]);
    const last = await api(one, 'PATCH', `/credentials/${id}`, { body: { description: 'd-final' } });
    await api(two, 'PATCH', `/credentials/${id}`, { body: { metadata: 'm-final' } });
    assert.equal(last.status, 200);
    const merged = (await api(one, 'GET', `/credentials/${id}`)).body;
    assert.equal(merged.description, 'd-final');
    assert.equal(merged.metadata, 'm-final');
  });

  it('an API key revoked with the CLI stops working on both within one second', async () => {
    const bot = JSON.parse((await runCli(['bots', 'create', '--name', 'revokee', '--json'], { databaseUrl })).stdout) as { id: string };
    const created = await runCli(['api-keys', 'create', '--owner', bot.id, '--json'], { databaseUrl });
    const { id: keyId, key } = JSON.parse(created.stdout) as { id: string; key: string };
    for (const server of [one, two]) assert.equal((await api(server, 'GET', '/credentials', { key })).status, 200, 'the key works (and is cached)');

    const revoke = runCli(['api-keys', 'revoke', keyId], { databaseUrl });
    const stoppedAt = new Map<ServerProcess, number>();
    let revoked: Awaited<typeof revoke> | undefined;
    void revoke.then((r) => (revoked = r));
    const deadline = Date.now() + 20_000;
    while (stoppedAt.size < 2 && Date.now() < deadline) {
      for (const server of [one, two]) {
        if (stoppedAt.has(server)) continue;
        const response = await api(server, 'GET', '/credentials', { key });
        if (response.status === 401) {
          assert.equal(response.body.error_code, 'ERR_NGROK_203');
          stoppedAt.set(server, Date.now());
        }
      }
    }
    const result = revoked ?? (await revoke);
    assert.equal(result.code, 0, result.stderr);
    for (const server of [one, two]) {
      const at = stoppedAt.get(server);
      assert.ok(at !== undefined, 'the key stopped working');
      assert.ok(at - result.endedAt <= 1000, `worked ${at - result.endedAt} ms after the revoke committed`);
    }
  });
});

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

/** Issue 6: a database that refuses writes is answered 503 while reads go on; slow clients are cut off. */

async function writesAndReads(t: TestApp, existingId: string) {
  const create = await t.call({ method: 'POST', url: '/credentials', body: { metadata: 'x'.repeat(4000) } });
  const update = await t.call({ method: 'PATCH', url: `/credentials/${existingId}`, body: { description: 'changed' } });
  const read = await t.call({ method: 'GET', url: `/credentials/${existingId}` });
  const list = await t.call({ method: 'GET', url: '/credentials' });
  return { create, update, read, list };
}

describe('SQLite refusing writes', () => {
  it('read-only: writes get a SPEC-shaped 503, reads are served, and it recovers', async () => {
    const t = await createTestApp({ DATABASE_URL: 'sqlite::memory:' });
    try {
      const id = json<{ id: string }>(await t.call({ method: 'POST', url: '/credentials', body: { description: 'kept' } })).id;
      await sql`pragma query_only = on`.execute(t.store.db);
      const during = await writesAndReads(t, id);
      expectError(during.create, 503, undefined);
      expectError(during.update, 503, undefined);
      assert.equal(during.create.headers['retry-after'], '1');
      assert.equal(during.read.statusCode, 200);
      assert.equal(json(during.read).description, 'kept');
      assert.equal(during.list.statusCode, 200);
      await sql`pragma query_only = off`.execute(t.store.db);
      assert.equal((await t.call({ method: 'POST', url: '/credentials', body: {} })).statusCode, 201);
      assert.ok(!t.logs.join('\n').includes(t.admin.key));
    } finally {
      await t.close();
    }
  });

  it('full: writes that need space get 503 and leave nothing half-written; reads are served', async () => {
    const t = await createTestApp({ DATABASE_URL: 'sqlite::memory:' });
    try {
      const id = json<{ id: string }>(await t.call({ method: 'POST', url: '/credentials', body: { description: 'kept' } })).id;
      const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(t.store.db)).rows[0]!.page_count;
      await sql.raw(`pragma max_page_count = ${pages}`).execute(t.store.db);
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        const response = await t.call({ method: 'POST', url: '/credentials', body: { metadata: 'y'.repeat(4000) } });
        statuses.push(response.statusCode);
        if (response.statusCode !== 201) expectError(response, 503, undefined);
      }
      assert.ok(statuses.includes(503), `a write was refused: ${statuses.join(',')}`);
      const read = await t.call({ method: 'GET', url: `/credentials/${id}` });
      assert.equal(read.statusCode, 200);
      const listed = json<{ credentials: { id: string; metadata?: string }[] }>(await t.call({ method: 'GET', url: '/credentials' }));
      assert.equal(listed.credentials.length, 1 + statuses.filter((s) => s === 201).length, 'only acknowledged creates exist');
      await sql.raw('pragma max_page_count = 1073741823').execute(t.store.db);
      assert.equal((await t.call({ method: 'POST', url: '/credentials', body: {} })).statusCode, 201);
    } finally {
      await t.close();
    }
  });
});

const postgres = process.env.TEST_DATABASE_URL;

describe('PostgreSQL refusing writes', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  it('read-only database: writes 503, reads served, recovery without restart', async () => {
    const admin = new pg.Client({ connectionString: postgres });
    await admin.connect();
    const name = `burrow_ro_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${name}`);
    const url = new URL(postgres!);
    url.pathname = `/${name}`;
    const t = await createTestApp({ DATABASE_URL: url.toString() });
    const dropConnections = () => admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name]);
    try {
      const id = json<{ id: string }>(await t.call({ method: 'POST', url: '/credentials', body: { description: 'kept' } })).id;
      await admin.query(`alter database ${name} set default_transaction_read_only = on`);
      await dropConnections();
      // The first statement on a dropped connection may fail too (503); what matters comes after.
      await t.call({ method: 'GET', url: `/credentials/${id}` });
      const during = await writesAndReads(t, id);
      expectError(during.create, 503, undefined);
      expectError(during.update, 503, undefined);
      assert.equal(during.read.statusCode, 200);
      assert.equal(json(during.read).description, 'kept');
      assert.equal(during.list.statusCode, 200);
      await admin.query(`alter database ${name} set default_transaction_read_only = off`);
      await dropConnections();
      await t.call({ method: 'GET', url: `/credentials/${id}` });
      assert.equal((await t.call({ method: 'POST', url: '/credentials', body: {} })).statusCode, 201);
    } finally {
      await t.close();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});

describe('slow and stalled clients', () => {
  async function listening(env: Record<string, string>) {
    const t = await createTestApp(env);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as net.AddressInfo).port;
    return { t, port };
  }

  /** Resolves with how long the server took to close the connection, and what it sent. */
  function untilClosed(socket: net.Socket): Promise<{ ms: number; received: string }> {
    const started = Date.now();
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    return new Promise((resolve) => socket.on('close', () => resolve({ ms: Date.now() - started, received })));
  }

  it('cuts off a client that never finishes its headers (HEADERS_TIMEOUT_MS)', async () => {
    const { t, port } = await listening({ HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '5000' });
    try {
      const socket = net.connect(port, '127.0.0.1');
      socket.write('GET /credentials HTTP/1.1\r\nHost: x\r\n');
      const { ms, received } = await untilClosed(socket);
      assert.ok(ms < 3000, `closed after ${ms} ms`);
      assert.match(received, /^HTTP\/1\.1 408|^$/);
    } finally {
      await t.close();
    }
  });

  it('cuts off a client that trickles its body (REQUEST_TIMEOUT_MS)', async () => {
    const { t, port } = await listening({ HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '800' });
    try {
      const socket = net.connect(port, '127.0.0.1');
      socket.write(`POST /credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.admin.key}\r\nService-Version: 2\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
      const trickle = setInterval(() => socket.writable && socket.write(' '), 100);
      const { ms } = await untilClosed(socket);
      clearInterval(trickle);
      assert.ok(ms < 4000, `closed after ${ms} ms`);
      assert.equal(json<{ credentials: unknown[] }>(await t.call({ method: 'GET', url: '/credentials' })).credentials.length, 0);
    } finally {
      await t.close();
    }
  });

  it('closes idle keep-alive connections (KEEP_ALIVE_TIMEOUT_MS)', async () => {
    const { t, port } = await listening({ KEEP_ALIVE_TIMEOUT_MS: '300' });
    try {
      const socket = net.connect(port, '127.0.0.1');
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      const { ms, received } = await untilClosed(socket);
      assert.match(received, /^HTTP\/1\.1 200/);
      assert.ok(ms >= 250 && ms < 3000, `closed after ${ms} ms`);
    } finally {
      await t.close();
    }
  });
});

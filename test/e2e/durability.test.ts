import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { api, cleanupProcesses, type ApiResponse, startServer, tempDatabaseUrl, type ServerProcess } from '../helpers/server-process.js';

/**
 * SPEC §9: a request that got a 2xx answer survives `kill -9` of the server; records are never
 * torn; a graceful shutdown (SIGTERM) lets in-flight requests finish and exits 0.
 */

after(cleanupProcesses);

const CREDENTIAL_ID = /^cr_[0-9A-Za-z]{27}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

interface Sent {
  description: string;
  metadata: string;
  acl: string[];
}

/** A distinct, recognisable body for item `i`: a torn or mixed-up record cannot match it. */
function bodyFor(tag: string, i: number): Sent {
  return {
    description: `${tag}-${i}`,
    metadata: JSON.stringify({ tag, i, pad: 'x'.repeat(i % 50) }),
    acl: i % 3 === 0 ? [] : [`bind:h${i}.example.com`, `bind:n${i}=v${i}`].slice(0, 1 + (i % 2)),
  };
}

/** Parses the `<tag>-<i>` description back to its index, or undefined. */
function indexOf(tag: string, description: unknown): number | undefined {
  if (typeof description !== 'string' || !description.startsWith(`${tag}-`)) return undefined;
  const i = Number(description.slice(tag.length + 1));
  return Number.isInteger(i) ? i : undefined;
}

/** Asserts `credential` is a complete, valid credential carrying exactly what `sent` asked for. */
function assertWhole(server: ServerProcess, credential: Record<string, unknown>, sent: Sent, ownerId: string | undefined): void {
  assert.deepEqual(Object.keys(credential), ['id', 'uri', 'created_at', 'description', 'metadata', 'token', 'acl', 'owner_id']);
  assert.match(String(credential.id), CREDENTIAL_ID);
  assert.equal(credential.uri, `${server.baseUrl}/credentials/${String(credential.id)}`);
  assert.match(String(credential.created_at), TIMESTAMP);
  assert.equal(credential.description, sent.description);
  assert.equal(credential.metadata, sent.metadata);
  assert.equal(credential.token, null);
  assert.deepEqual(credential.acl, sent.acl);
  if (ownerId !== undefined) assert.equal(credential.owner_id, ownerId);
  else assert.match(String(credential.owner_id), /^usr_[0-9A-Za-z]{27}$/);
}

/** Every credential of the account, following next_page_uri. */
async function listAll(server: ServerProcess): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  let path: string | null = '/credentials?limit=100';
  for (let pages = 0; path !== null; pages++) {
    assert.ok(pages < 100, 'the list does not terminate');
    const page: ApiResponse = await api(server, 'GET', path);
    assert.equal(page.status, 200, page.text);
    all.push(...(page.body.credentials as Record<string, unknown>[]));
    const next = page.body.next_page_uri as string | null;
    path = next === null ? null : next.slice(server.baseUrl.length);
  }
  return all;
}

/** Runs `work` on each item with at most `width` at a time. */
async function pool<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}

describe('durability of a real server process', () => {
  it('keeps every acknowledged create across kill -9 and a restart', async (t) => {
    const databaseUrl = tempDatabaseUrl();
    const first = await startServer({ databaseUrl, context: t });
    const ownerId = first.bootstrap?.userId;
    assert.ok(ownerId, 'the first start bootstraps');

    const acknowledged = new Map<string, Sent>();
    const createOne = async (i: number) => {
      const sent = bodyFor('kill', i);
      const response = await api(first, 'POST', '/credentials', { body: sent });
      assert.equal(response.status, 201, response.text);
      acknowledged.set(response.body.id as string, sent);
    };
    // Twenty one after another, then thirty at once.
    for (let i = 0; i < 20; i++) await createOne(i);
    await Promise.all(Array.from({ length: 30 }, (_, k) => createOne(20 + k)));
    assert.equal(acknowledged.size, 50);

    const exit = await first.kill();
    assert.equal(exit.signal, 'SIGKILL');

    const second = await startServer({ databaseUrl, bootstrapApiKey: first.apiKey, context: t });
    assert.equal(second.bootstrap, undefined, 'a restart must not bootstrap again');
    await pool([...acknowledged], 8, async ([id, sent]) => {
      const got = await api(second, 'GET', `/credentials/${id}`);
      assert.equal(got.status, 200, `${id} was acknowledged with 201 but is gone: ${got.text}`);
      assertWhole(second, got.body, sent, ownerId);
    });
    const listed = await listAll(second);
    assert.deepEqual(new Set(listed.map((c) => c.id)), new Set(acknowledged.keys()));
    const ids = listed.map((c) => String(c.id));
    assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');

    // The restarted server keeps working on the same file.
    const after = await api(second, 'POST', '/credentials', { body: { description: 'after restart' } });
    assert.equal(after.status, 201, after.text);
    assert.ok(String(after.body.id) > ids[0]!, 'ids keep increasing across restarts');
    await second.kill();
  });

  it('keeps every acknowledged create when killed in the middle of a concurrent burst', async (t) => {
    const databaseUrl = tempDatabaseUrl();
    const first = await startServer({ databaseUrl, context: t });
    const ownerId = first.bootstrap?.userId;
    const BURST = 200;
    const KILL_AFTER = 3;

    const acknowledged = new Map<string, Sent>();
    let killing: Promise<unknown> | undefined;
    const attempts = Array.from({ length: BURST }, async (_, i) => {
      const sent = bodyFor('burst', i);
      const response = await api(first, 'POST', '/credentials', { body: sent });
      if (response.status !== 201) throw new Error(`create ${i}: ${response.status} ${response.text}`);
      acknowledged.set(String(response.body.id), sent);
      if (acknowledged.size >= KILL_AFTER) killing ??= first.kill();
    });
    const settled = await Promise.allSettled(attempts);
    await killing;
    assert.notEqual(first.child.signalCode, null, 'the server was killed during the burst');
    // A request may fail only because the process died under it, never with an HTTP error.
    for (const outcome of settled) {
      if (outcome.status === 'rejected') assert.doesNotMatch(String(outcome.reason), /^Error: create \d+:/);
    }
    assert.ok(acknowledged.size >= KILL_AFTER);

    const second = await startServer({ databaseUrl, bootstrapApiKey: first.apiKey, context: t });
    const listed = await listAll(second);
    const listedIds = new Set(listed.map((c) => String(c.id)));
    t.diagnostic(`${BURST} sent, ${acknowledged.size} acknowledged before the kill landed, ${listed.length} stored`);
    for (const [id, sent] of acknowledged) {
      assert.ok(listedIds.has(id), `${id} (${sent.description}) got a 201 but is not listed after the restart`);
    }
    // Every stored credential is whole: it is exactly one of the bodies that were sent.
    for (const credential of listed) {
      const i = indexOf('burst', credential.description);
      assert.ok(i !== undefined && i >= 0 && i < BURST, `unexpected credential ${JSON.stringify(credential)}`);
      assertWhole(second, credential, bodyFor('burst', i), ownerId);
    }
    assert.equal(new Set(listed.map((c) => c.description)).size, listed.length, 'no request was stored twice');
    await pool([...acknowledged], 8, async ([id, sent]) => {
      const got = await api(second, 'GET', `/credentials/${id}`);
      assert.equal(got.status, 200, got.text);
      assertWhole(second, got.body, sent, ownerId);
    });
    await second.kill();
  });

  it('finishes in-flight requests on SIGTERM, exits 0 and keeps the data', async (t) => {
    const databaseUrl = tempDatabaseUrl();
    const first = await startServer({ databaseUrl, context: t });
    const ownerId = first.bootstrap?.userId;

    const done = new Map<string, Sent>();
    for (let i = 0; i < 5; i++) {
      const sent = bodyFor('term', i);
      const response = await api(first, 'POST', '/credentials', { body: sent });
      assert.equal(response.status, 201, response.text);
      done.set(String(response.body.id), sent);
    }

    // A slow burst: each request's headers are in (the server said 100 Continue, so the request
    // is being handled), but its body is sent only after the shutdown has begun.
    const SLOW = 8;
    const slow = await Promise.all(
      Array.from({ length: SLOW }, (_, k) => startSlowCreate(first, bodyFor('term', 5 + k))),
    );

    const exited = first.stop('SIGTERM');
    await waitForLog(first, (entry) => entry.msg === 'shutting down', 10_000);
    await waitUntilRefusing(first, 10_000);
    // The clients take their time; a server that exits on a short timer instead of waiting for
    // its in-flight requests is caught here.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(first.child.exitCode, null, 'the process waits for its in-flight requests');

    const answers = await Promise.all(slow.map((request) => request.finish()));
    for (const [k, answer] of answers.entries()) {
      assert.equal(answer.status, 201, `an in-flight request must complete: ${answer.status} ${answer.text}`);
      const body = JSON.parse(answer.text) as Record<string, unknown>;
      const sent = slow[k]!.sent;
      assert.equal(body.description, sent.description);
      done.set(String(body.id), sent);
    }

    const exit = await exited;
    assert.deepEqual(exit, { code: 0, signal: null }, `stderr:\n${first.stderr.join('\n')}`);

    const second = await startServer({ databaseUrl, bootstrapApiKey: first.apiKey, context: t });
    const listed = await listAll(second);
    assert.deepEqual(new Set(listed.map((c) => String(c.id))), new Set(done.keys()));
    for (const credential of listed) assertWhole(second, credential, done.get(String(credential.id))!, ownerId);
    await second.stop('SIGTERM');
  });
});

interface SlowCreate {
  sent: Sent;
  /** Sends the body and resolves with the answer. */
  finish(): Promise<{ status: number; text: string }>;
}

/**
 * Opens `POST /credentials` on its own connection with `Expect: 100-continue` and resolves once
 * the server has answered `100 Continue`: from then on the request is in the server's hands.
 */
function startSlowCreate(server: ServerProcess, sent: Sent): Promise<SlowCreate> {
  const payload = JSON.stringify(sent);
  return new Promise((resolveStarted, rejectStarted) => {
    let settleAnswer!: { resolve: (value: { status: number; text: string }) => void; reject: (error: unknown) => void };
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => (settleAnswer = { resolve, reject }));
    answer.catch(() => {}); // observed through finish()
    const request = httpRequest(`${server.baseUrl}/credentials`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${server.apiKey}`,
        'service-version': '2',
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(payload)),
        expect: '100-continue',
      },
    });
    request.on('continue', () =>
      resolveStarted({
        sent,
        finish: () => {
          request.end(payload);
          return answer;
        },
      }),
    );
    request.on('response', (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => settleAnswer.resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', settleAnswer.reject);
    });
    request.on('error', (error) => {
      rejectStarted(error);
      settleAnswer.reject(error);
    });
    request.flushHeaders();
  });
}

async function waitForLog(server: ServerProcess, match: (entry: Record<string, unknown>) => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!server.logs().some(match)) {
    assert.ok(Date.now() < deadline, `no such log line within ${ms} ms:\n${server.stdout.join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once the server refuses new connections: its shutdown is under way. */
async function waitUntilRefusing(server: ServerProcess, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      // A new connection each time: a kept-alive one would say nothing about the listener.
      const probe = httpRequest(`${server.baseUrl}/healthz`, { agent: false, timeout: 1000 }, (response) => {
        response.resume();
        response.on('end', () => resolve(false));
      });
      probe.on('timeout', () => probe.destroy());
      probe.on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
      probe.end();
    });
    if (refused) return;
    assert.ok(Date.now() < deadline, `the server still accepted connections ${ms} ms after SIGTERM`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

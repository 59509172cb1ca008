import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type ngrok from '@ngrok/ngrok';
import { ngrokCode } from '../helpers/data-plane.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * Wildcard endpoints (SPEC §5.3: `bind:*.example.com` matches "the literal `*.example.com`"; the
 * seed: "the wildcard pattern itself is also matched"): an agent binds `*.example.com` and serves
 * every name under it that no endpoint of its own serves, through the real SDK.
 */

let server: TrafficServer;
let session: ngrok.Session;
let wildLocal: http.Server;
let exactLocal: http.Server;
let burrowCa: string;

const serve = async (name: string): Promise<http.Server> => {
  const local = http.createServer((req, res) => res.end(`${name} ${req.headers.host}`));
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  return local;
};
const urlOf = (local: http.Server) => `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;

before(async () => {
  server = await startDataPlane();
  burrowCa = readFileSync(server.caPath, 'utf8');
  session = await connectAgent(server, await createToken(server, ['bind:*.example.com']));
  wildLocal = await serve('wild');
  exactLocal = await serve('exact');
});

after(async () => {
  await session?.close().catch(() => {});
  wildLocal?.close();
  exactLocal?.close();
  await cleanupProcesses();
});

function get(scheme: 'http' | 'https', host: string): Promise<{ status: number; body: string; code: string | undefined }> {
  const port = scheme === 'http' ? server.httpPort : server.tlsPort;
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, path: '/', headers: { host: `${host}:${port}` }, agent: false as const, timeout: 20_000 };
    const req = scheme === 'http' ? http.get(options) : https.get({ ...options, servername: host, ca: burrowCa });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.once('end', () => resolve({ status: res.statusCode!, body, code: res.headers['ngrok-error-code'] as string | undefined }));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
  });
}

for (const scheme of ['http', 'https'] as const) {
  describe(`${scheme} wildcard endpoint`, () => {
    let wild: ngrok.Listener;
    let exact: ngrok.Listener;
    const port = () => (scheme === 'http' ? server.httpPort : server.tlsPort);
    const builder = () => (scheme === 'http' ? session.httpEndpoint().scheme('HTTP') : session.httpEndpoint());

    before(async () => {
      wild = await builder().domain('*.Example.com').listenAndForward(urlOf(wildLocal));
      exact = await builder().domain('app.example.com').listenAndForward(urlOf(exactLocal));
    });

    test('binds under bind:*.example.com, with the pattern as its URL and in GET /endpoints', async () => {
      assert.equal(wild.url(), `${scheme}://*.example.com:${port()}`);
      const listed = await api(server, 'GET', '/endpoints');
      assert.equal(listed.status, 200);
      const urls = (listed.body.endpoints as { public_url: string; hostport: string }[]).map((endpoint) => endpoint.public_url);
      assert.ok(urls.includes(`${scheme}://*.example.com:${port()}`), urls.join(' '));
    });

    test('serves every name under the domain, at any depth (TLS from a certificate for that name)', { timeout: 30_000 }, async () => {
      for (const host of ['foo.example.com', 'a.b.Example.com']) {
        const answer = await get(scheme, host);
        assert.equal(answer.status, 200, host);
        assert.equal(answer.body, `wild ${host}:${port()}`);
      }
    });

    test("a name's own endpoint wins over the wildcard; the apex is not covered", { timeout: 30_000 }, async () => {
      assert.equal((await get(scheme, 'app.example.com')).body, `exact app.example.com:${port()}`);
      if (scheme === 'http') {
        const apex = await get('http', 'example.com');
        assert.deepEqual([apex.status, apex.code], [404, 'ERR_NGROK_3200']);
      } else {
        // no endpoint names example.com: the TLS port refuses the handshake (unrecognized_name)
        await assert.rejects(get('https', 'example.com'));
      }
    });

    test('once closed, the names under it are offline again', { timeout: 30_000 }, async () => {
      await wild.close();
      if (scheme === 'http') {
        const gone = await get('http', 'foo.example.com');
        assert.deepEqual([gone.status, gone.code], [404, 'ERR_NGROK_3200']);
      } else await assert.rejects(get('https', 'foo.example.com'));
      assert.equal((await get(scheme, 'app.example.com')).status, 200);
      await exact.close();
    });
  });
}

test('a wildcard bind needs an ACL covering the pattern (316), and a valid pattern (326)', { timeout: 30_000 }, async () => {
  const narrow = await connectAgent(server, await createToken(server, ['bind:app.example.com', 'bind:*.a.example.com']));
  try {
    const codeOf = async (work: Promise<unknown>) => {
      const error = await work.then(
        () => assert.fail('the bind succeeded'),
        (caught: unknown) => caught,
      );
      return ngrokCode(error).code;
    };
    assert.equal(await codeOf(narrow.httpEndpoint().domain('*.example.com').listen(false)), 'ERR_NGROK_316');
    assert.equal(await codeOf(narrow.httpEndpoint().domain('a.*.example.com').listen(false)), 'ERR_NGROK_326');
    assert.equal(await codeOf(narrow.httpEndpoint().domain('*.com').listen(false)), 'ERR_NGROK_326');
    const deeper = await narrow.httpEndpoint().domain('*.a.example.com').listen(false);
    assert.equal(deeper.url(), `https://*.a.example.com:${server.tlsPort}`);
    await deeper.close();
  } finally {
    await narrow.close().catch(() => {});
  }
});

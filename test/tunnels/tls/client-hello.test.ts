// @test-pass sqlite
import assert from 'node:assert/strict';
import { createServer as createNetServer, connect as netConnect, type AddressInfo, type Server, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { TLSSocket, connect, type ConnectionOptions } from 'node:tls';
import fc from 'fast-check';
import { loadOrCreateCa } from '../../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../../src/tunnels/tls/certificates.js';
import { parseClientHello, readClientHello, unrecognizedNameAlert, type ReadClientHelloResult } from '../../../src/tunnels/tls/client-hello.js';
import { tempDir } from './helpers.js';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** The bytes a real Node TLS client sends first (its ClientHello record), captured by a plain TCP server. */
async function captureClientHello(options: ConnectionOptions): Promise<Buffer> {
  let resolveBytes!: (b: Buffer) => void;
  const bytes = new Promise<Buffer>((resolve) => (resolveBytes = resolve));
  const server = createNetServer((socket) => {
    let got = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= 5 && got.length >= 5 + got.readUInt16BE(3)) {
        resolveBytes(got);
        socket.destroy();
      }
    });
  });
  const port = await listen(server);
  const client = connect({ host: '127.0.0.1', port, ...options });
  client.on('error', () => {});
  try {
    return await bytes;
  } finally {
    client.destroy();
    server.close();
  }
}

/** Re-frames the handshake message of a one-record ClientHello into records of `size` bytes. */
function reframe(record: Buffer, size: number): Buffer {
  const message = record.subarray(5);
  const out: Buffer[] = [];
  for (let i = 0; i < message.length; i += size) {
    const part = message.subarray(i, i + size);
    const header = Buffer.from([22, 3, 1, 0, 0]);
    header.writeUInt16BE(part.length, 3);
    out.push(header, part);
  }
  return Buffer.concat(out);
}

/** Builds a ClientHello record by hand, with the given extensions. */
function handmade(extensions: Array<[number, Buffer]> | undefined): Buffer {
  const parts = [Buffer.from([3, 3]), Buffer.alloc(32, 7), Buffer.from([0]), Buffer.from([0, 2, 0x13, 0x01]), Buffer.from([1, 0])];
  if (extensions) {
    const ext = Buffer.concat(extensions.map(([type, data]) => Buffer.concat([u16(type), u16(data.length), data])));
    parts.push(u16(ext.length), ext);
  }
  const body = Buffer.concat(parts);
  const hs = Buffer.concat([Buffer.from([1, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]), body]);
  return Buffer.concat([Buffer.from([22, 3, 1]), u16(hs.length), hs]);
}
const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const sniExtension = (...names: Array<string | Buffer>): [number, Buffer] => {
  const entries = Buffer.concat(names.map((n) => {
    const b = Buffer.isBuffer(n) ? n : Buffer.from(n, 'latin1');
    return Buffer.concat([Buffer.from([0]), u16(b.length), b]);
  }));
  return [0, Buffer.concat([u16(entries.length), entries])];
};

describe('parseClientHello', () => {
  it('reads SNI and ALPN from a real TLS 1.3 and TLS 1.2 ClientHello', async () => {
    for (const maxVersion of ['TLSv1.3', 'TLSv1.2'] as const) {
      const hello = await captureClientHello({ servername: 'A.Burrow.Localhost', ALPNProtocols: ['h2', 'http/1.1'], maxVersion });
      const parsed = parseClientHello(hello);
      assert.deepEqual(parsed, { status: 'done', sni: 'a.burrow.localhost', alpn: ['h2', 'http/1.1'], length: hello.length }, maxVersion);
    }
  });

  it('has no SNI when the client dials an IP, and an empty ALPN list when none is offered', async () => {
    const hello = await captureClientHello({});
    assert.deepEqual(parseClientHello(hello), { status: 'done', alpn: [], length: hello.length });
  });

  it('is incomplete at every prefix and done at the end, whether in one record or many', async () => {
    const hello = await captureClientHello({ servername: 'a.burrow.localhost', ALPNProtocols: ['h2'] });
    const expected = { status: 'done', sni: 'a.burrow.localhost', alpn: ['h2'] };
    for (const framed of [hello, reframe(hello, 1), reframe(hello, 7), reframe(hello, 100), reframe(hello, 4), reframe(hello, 3)]) {
      for (let i = 1; i < framed.length; i++) {
        const partial = parseClientHello(framed.subarray(0, i));
        assert.equal(partial.status, 'incomplete', `prefix ${i} of ${framed.length}`);
        if (partial.status === 'incomplete') assert.ok(partial.needed > i && partial.needed <= framed.length, `needed ${partial.needed} at ${i}`);
      }
      assert.deepEqual(parseClientHello(framed), { ...expected, length: framed.length });
      // Bytes after the ClientHello (the client's next flight) are left alone.
      assert.deepEqual(parseClientHello(Buffer.concat([framed, Buffer.from([23, 3, 3, 0, 1, 9])])), { ...expected, length: framed.length });
    }
  });

  it('answers not TLS from the first byte of anything else', () => {
    for (const text of ['GET / HTTP/1.1\r\n', 'S', 'SSH-2.0-OpenSSH\r\n', '\x16\x01']) {
      const parsed = parseClientHello(Buffer.from(text, 'latin1'));
      assert.equal(parsed.status, 'error', text);
      assert.equal(parsed.status === 'error' && parsed.code, 'not_tls', text);
    }
    // SSLv2-style hello, an alert record, application data.
    for (const bytes of [[0x80, 0x2e, 0x01], [21, 3, 3, 0, 2, 2, 40], [23, 3, 3, 0, 1, 0]]) {
      assert.equal(parseClientHello(Buffer.from(bytes)).status, 'error');
    }
  });

  it('refuses a handshake that is not a ClientHello, an empty record, and a non-handshake record in between', async () => {
    assert.equal(parseClientHello(Buffer.from([22, 3, 1, 0, 4, 2, 0, 0, 0])).status, 'error');
    assert.equal(parseClientHello(Buffer.from([22, 3, 1, 0, 0])).status, 'error');
    const hello = await captureClientHello({ servername: 'x.example' });
    const split = reframe(hello, 50);
    const broken = Buffer.concat([split.subarray(0, 55), Buffer.from([23, 3, 3, 0, 1, 0]), split.subarray(55)]);
    assert.deepEqual(parseClientHello(broken), { status: 'error', code: 'malformed', reason: 'a non-handshake record inside the ClientHello' });
  });

  it('refuses a ClientHello over 16 KiB as soon as its length says so', async () => {
    // A hello with 20 KB of padding, in two records: the handshake header announces the size.
    const pad: [number, Buffer] = [21, Buffer.alloc(20_000)];
    const big = handmade([sniExtension('big.example'), pad]);
    const framed = reframe(big, 16_000);
    const early = parseClientHello(framed.subarray(0, 9));
    assert.equal(early.status === 'error' && early.code, 'too_large');
    // One just under the limit is fine, and the limit is adjustable.
    const fits = reframe(handmade([sniExtension('ok.example'), [21, Buffer.alloc(16_200)]]), 16_000);
    assert.ok(fits.length <= 16_384, String(fits.length));
    assert.equal(parseClientHello(fits).status, 'done');
    const small = parseClientHello(fits, 1000);
    assert.equal(small.status === 'error' && small.code, 'too_large');
    // A record header announcing more than the limit.
    const header = Buffer.from([22, 3, 1, 0x40, 0x01]);
    assert.equal(parseClientHello(header).status, 'error');
  });

  it('a hello cut into tiny records arriving one by one is parsed a few times, not once per record', () => {
    const wire = reframe(handmade([sniExtension('crumbs.example'), [21, Buffer.alloc(4000)]]), 2);
    let parses = 0;
    let needed = 1;
    let last: ReturnType<typeof parseClientHello> | undefined;
    // what readClientHello does: parse again only once `needed` bytes are in
    for (let end = 1; end <= wire.length; end++) {
      if (end < needed) continue;
      last = parseClientHello(wire.subarray(0, end));
      parses++;
      if (last.status !== 'incomplete') break;
      needed = last.needed;
    }
    assert.equal(last?.status === 'done' && last.sni, 'crumbs.example');
    assert.ok(parses < 60, `${parses} parses for ${Math.ceil(wire.length / 7)} records`);
  });

  it('counts the ClientHello message itself: the largest one record holds passes, one byte more does not', () => {
    const sized = (messageBytes: number) => {
      const base = handmade([sniExtension('max.example'), [21, Buffer.alloc(0)]]).length - 5;
      return handmade([sniExtension('max.example'), [21, Buffer.alloc(messageBytes - base)]]);
    };
    const largest = sized(16_384); // one record of the largest payload TLS allows
    assert.equal(largest.length, 5 + 16_384);
    const parsed = parseClientHello(largest);
    assert.equal(parsed.status === 'done' && parsed.sni, 'max.example');
    // the same in three records: the record headers do not count against the hello
    assert.equal(parseClientHello(reframe(largest, 6000)).status, 'done');
    const over = reframe(sized(16_385), 16_000);
    assert.equal(parseClientHello(over).status === 'error' && (parseClientHello(over) as { code: string }).code, 'too_large');
    // a hello cut into crumbs: its records may take at most twice the limit
    const crumbs = reframe(handmade([sniExtension("crumbs.example"), [21, Buffer.alloc(12_000)]]), 2);
    assert.ok(crumbs.length > 2 * 16_384);
    const cut = parseClientHello(crumbs);
    assert.equal(cut.status === 'error' && cut.code, 'too_large');
  });

  it('validates the server_name', () => {
    const sni = (...names: Array<string | Buffer>) => parseClientHello(handmade([sniExtension(...names)]));
    assert.deepEqual(sni('Foo.Example.COM'), { status: 'done', sni: 'foo.example.com', alpn: [], length: handmade([sniExtension('Foo.Example.COM')]).length });
    for (const bad of ['', 'a..b', 'trailing.dot.', '-x.example', 'sp ace.example', 'a'.repeat(64) + '.example', '*.example.com', Buffer.from('café.example', 'utf8'), Buffer.from('a\0b')]) {
      const parsed = sni(bad);
      assert.equal(parsed.status, 'error', String(bad));
      assert.equal(parsed.status === 'error' && parsed.code, 'invalid_sni', String(bad));
    }
    // an IPv4 literal is routed like a name (IP hostnames and edge hostports exist); IPv6 is not one
    assert.equal((sni('10.1.2.3') as { sni?: string }).sni, '10.1.2.3');
    assert.equal(sni('::1').status, 'error');
    assert.equal(sni('a.example', 'b.example').status, 'error', 'two host_names');
    assert.equal(parseClientHello(handmade([[0, Buffer.alloc(0)]])).status, 'error', 'an empty server_name extension');
    assert.equal(parseClientHello(handmade([sniExtension('a.example'), sniExtension('b.example')])).status, 'error', 'duplicate extension');
  });

  it('parses a ClientHello without extensions and refuses truncated fields', () => {
    const bare = handmade(undefined);
    assert.deepEqual(parseClientHello(bare), { status: 'done', alpn: [], length: bare.length });
    // Shrink the handshake length by one while keeping the record consistent: a truncated body.
    const alpn: [number, Buffer] = [16, Buffer.from([0, 3, 2, 0x68, 0x32])];
    const good = handmade([alpn]);
    assert.deepEqual(parseClientHello(good), { status: 'done', alpn: ['h2'], length: good.length });
    const bad = handmade([[16, Buffer.from([0, 4, 2, 0x68, 0x32])]]);
    assert.equal(parseClientHello(bad).status, 'error');
    const emptyProto = handmade([[16, Buffer.from([0, 1, 0])]]);
    assert.equal(parseClientHello(emptyProto).status, 'error');
  });

  it('never throws on random bytes, mutated hellos or random framings', async () => {
    const hello = await captureClientHello({ servername: 'fuzz.burrow.localhost', ALPNProtocols: ['h2', 'http/1.1'] });
    const runs = Number(process.env.FUZZ_RUNS ?? 500);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        const parsed = parseClientHello(Buffer.from(bytes));
        assert.ok(['incomplete', 'done', 'error'].includes(parsed.status));
      }),
      { numRuns: runs },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(hello.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        fc.integer({ min: 1, max: hello.length }),
        (mutations, cut) => {
          const copy = Buffer.from(hello);
          for (const [at, value] of mutations) copy[at] = value;
          const parsed = parseClientHello(copy.subarray(0, cut));
          if (parsed.status === 'done') {
            assert.ok(parsed.length <= cut);
            assert.ok(parsed.sni === undefined || /^[a-z0-9_.-]+$/.test(parsed.sni));
          }
        },
      ),
      { numRuns: runs },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 600 }), fc.uint8Array({ maxLength: 64 }), (size, tail) => {
        const framed = reframe(hello, size);
        const parsed = parseClientHello(Buffer.concat([framed, tail]));
        assert.deepEqual(parsed, { status: 'done', sni: 'fuzz.burrow.localhost', alpn: ['h2', 'http/1.1'], length: framed.length });
      }),
      { numRuns: Math.min(runs, 200) },
    );
  });
});

/** A TCP server whose connections are handed to `handler` after readClientHello. */
async function helloServer(t: { after(fn: () => Promise<void>): void }, handler: (socket: Socket, hello: ReadClientHelloResult) => void, options = {}) {
  const results: ReadClientHelloResult[] = [];
  const server = createNetServer((socket) => {
    socket.on('error', () => {});
    void readClientHello(socket, options).then((hello) => {
      results.push(hello);
      handler(socket, hello);
    });
  });
  const port = await listen(server);
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, results };
}

describe('readClientHello', () => {
  it('hands back every byte, so the socket can be wrapped in a TLSSocket and the handshake completes', async (t) => {
    const ca = await loadOrCreateCa(await tempDir(t));
    const leaf = await issueCertificate(ca, { dnsNames: ['*.burrow.localhost'] });
    const { port, results } = await helloServer(t, (socket, hello) => {
      assert.equal(hello.status, 'done');
      socket.unshift(hello.buffered);
      const tlsSocket = new TLSSocket(socket, { isServer: true, cert: leaf.certPem, key: leaf.keyPem, ALPNProtocols: ['http/1.1'] });
      tlsSocket.on('error', () => {});
      tlsSocket.on('data', (d) => tlsSocket.write(`echo:${d.toString()}`));
    });
    const reply = await new Promise<string>((resolve, reject) => {
      const client = connect({ host: '127.0.0.1', port, servername: 'app.burrow.localhost', ca: ca.certPem, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
        assert.equal(client.alpnProtocol, 'http/1.1');
        client.write('hello');
        client.once('data', (d) => {
          resolve(d.toString());
          client.end();
        });
      });
      client.on('error', reject);
    });
    assert.equal(reply, 'echo:hello');
    const hello = results[0]!;
    assert.equal(hello.status === 'done' && hello.sni, 'app.burrow.localhost');
    assert.deepEqual(hello.status === 'done' && hello.alpn, ['h2', 'http/1.1']);
  });

  it('assembles a ClientHello sent in small pieces and keeps the bytes that follow it', async (t) => {
    const hello = await captureClientHello({ servername: 'slow.burrow.localhost' });
    const framed = reframe(hello, 40);
    const after = Buffer.from('after-the-hello');
    const { port, results } = await helloServer(t, (socket) => socket.destroy());
    const client = netConnect({ host: '127.0.0.1', port });
    client.setNoDelay(true);
    client.on('error', () => {});
    const closed = new Promise((resolve) => client.once('close', resolve)); // the server may close before the last write
    await new Promise((resolve) => client.once('connect', resolve));
    for (let i = 0; i < framed.length; i += 97) {
      client.write(framed.subarray(i, i + 97));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    client.write(after);
    await closed;
    const result = results[0]!;
    assert.equal(result.status, 'done');
    assert.equal(result.status === 'done' && result.sni, 'slow.burrow.localhost');
    assert.equal(result.status === 'done' && result.length, framed.length);
    // Everything read is handed back, in order: the hello and whatever had arrived after it.
    assert.deepEqual(result.buffered.subarray(0, framed.length), framed);
    assert.ok(after.subarray(0, result.buffered.length - framed.length).equals(result.buffered.subarray(framed.length)));
  });

  it('gives up on not-TLS at once, on silence after timeoutMs, on close, and past maxBytes', async (t) => {
    const { port, results } = await helloServer(t, (socket) => socket.destroy(), { timeoutMs: 200, maxBytes: 1000 });
    const send = async (bytes: Buffer | undefined, end: boolean) => {
      const client = netConnect({ host: '127.0.0.1', port });
      client.on('error', () => {});
      const closed = new Promise((resolve) => client.once('close', resolve));
      await new Promise((resolve) => client.once('connect', resolve));
      if (bytes) client.write(bytes);
      if (end) client.end();
      await closed;
    };
    const started = Date.now();
    await send(Buffer.from('GET / HTTP/1.1\r\n'), false);
    assert.ok(Date.now() - started < 150, 'not TLS is refused without waiting');
    await send(Buffer.from([22, 3, 1]), false);
    await send(Buffer.from([22, 3, 1, 0, 50, 1]), true);
    await send(reframe(handmade([[21, Buffer.alloc(2000)]]), 500), false);
    assert.deepEqual(results.map((r) => r.status === 'error' && r.code), ['not_tls', 'timeout', 'closed', 'too_large']);
    assert.deepEqual(results[1]!.buffered, Buffer.from([22, 3, 1]));
  });

  it('answers closed at once for a socket that is already gone', async () => {
    const { Socket } = await import('node:net');
    const socket = new Socket();
    socket.destroy();
    const result = await readClientHello(socket, { timeoutMs: 5000 });
    assert.equal(result.status === 'error' && result.code, 'closed');
  });
});

describe('unrecognizedNameAlert', () => {
  it('is a fatal unrecognized_name alert record that fails a real client with that reason', async (t) => {
    assert.deepEqual([...unrecognizedNameAlert()], [21, 3, 3, 0, 2, 2, 112]);
    const { port } = await helloServer(t, (socket) => {
      socket.end(unrecognizedNameAlert());
    });
    for (const maxVersion of ['TLSv1.3', 'TLSv1.2'] as const) {
      const err = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
        const client = connect({ host: '127.0.0.1', port, servername: 'nobody.burrow.localhost', maxVersion }, () => reject(new Error('connected')));
        client.on('error', resolve);
      });
      assert.equal(err.code, 'ERR_SSL_TLSV1_UNRECOGNIZED_NAME', `${maxVersion}: ${err.code} ${err.message}`);
    }
  });
});

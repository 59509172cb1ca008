// @test-pass sqlite
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { JsonSyntaxError, JsonValueScanner } from '../../../src/tunnels/protocol/json-scanner.js';
import { StreamReadError, StreamReader } from '../../../src/tunnels/protocol/stream-reader.js';

function splitAt(buf: Buffer, cuts: number[]): Buffer[] {
  const pts = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of pts) {
    out.push(buf.subarray(prev, p));
    prev = p;
  }
  out.push(buf.subarray(prev));
  return out;
}

async function readJsonFromChunks(chunks: Buffer[], opts = { maxBytes: 1 << 20, timeoutMs: 2000 }, end = false) {
  const s = new PassThrough();
  const r = new StreamReader(s);
  const p = r.readJson(opts);
  p.catch(() => {}); // awaited below; may reject while chunks are still being written
  for (const c of chunks) {
    s.write(c);
    await new Promise((res) => setImmediate(res));
  }
  if (end) s.end();
  return { result: await p, reader: r, stream: s };
}

async function expectReadError(p: Promise<unknown>, kind: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof StreamReadError && e.kind === kind);
}

describe('JsonValueScanner', () => {
  it('finds the end of an object, ignoring braces inside strings and escapes', () => {
    const sc = new JsonValueScanner();
    const text = '{"a":"}{\\"]","b":[1,{"c":null}]}  rest';
    assert.equal(sc.push(Buffer.from(text)), text.indexOf('  rest'));
  });

  it('rejects a mismatched bracket and a stray byte at once', () => {
    assert.throws(() => new JsonValueScanner().push(Buffer.from('{"a":1]')), JsonSyntaxError);
    assert.throws(() => new JsonValueScanner().push(Buffer.from('{"a":@')), JsonSyntaxError);
    assert.throws(() => new JsonValueScanner().push(Buffer.from('}')), JsonSyntaxError);
  });

  it('ends a top-level number only at a delimiter or end of input', () => {
    const sc = new JsonValueScanner();
    assert.equal(sc.push(Buffer.from('123')), -1);
    assert.equal(sc.endOfInput(), true);
  });
});

describe('StreamReader.readJson', () => {
  it('RS style: one object without newline, stream left open', async () => {
    const { result } = await readJsonFromChunks([Buffer.from('{"Version":["3","2"]}')]);
    assert.deepEqual(result.value, { Version: ['3', '2'] });
  });

  it('GO style: trailing newline is consumed', async () => {
    const { result, reader } = await readJsonFromChunks([Buffer.from('{"a":1}\n')]);
    assert.deepEqual(result.value, { a: 1 });
    // nothing of the value is left in the reader
    const s = reader.stream as PassThrough;
    s.end();
    assert.equal(await reader.next(), null);
  });

  it('JSON split across many one-byte writes', async () => {
    const buf = Buffer.from(JSON.stringify({ Extra: { AuthToken: 'tok€n', Metadata: '{"x":"}"}' } }));
    const chunks = [...buf].map((b) => Buffer.from([b]));
    const { result } = await readJsonFromChunks(chunks);
    assert.deepEqual(result.value, { Extra: { AuthToken: 'tok€n', Metadata: '{"x":"}"}' } });
  });

  it('two JSON values in one write are not read as one', async () => {
    await expectReadError(readJsonFromChunks([Buffer.from('{"a":1}{"b":2}')]), 'trailing');
  });

  it('a second value written later is left in the stream', async () => {
    const { result, reader } = await readJsonFromChunks([Buffer.from('{"a":1}'), Buffer.from('{"b":2}')]);
    assert.deepEqual(result.value, { a: 1 });
    assert.equal((await reader.next())?.toString(), '{"b":2}');
  });

  it('1 MiB cap: exactly the cap passes, one byte more fails', async () => {
    const cap = 1 << 20;
    const overhead = '{"a":""}'.length;
    const fits = Buffer.from(`{"a":"${'x'.repeat(cap - overhead)}"}`);
    assert.equal(fits.length, cap);
    const ok = await readJsonFromChunks(splitAt(fits, [70000, 300000, 900000]));
    assert.equal((ok.result.value as { a: string }).a.length, cap - overhead);
    const over = Buffer.from(`{"a":"${'x'.repeat(cap - overhead + 1)}"}`);
    await expectReadError(readJsonFromChunks(splitAt(over, [70000, 300000, 900000])), 'oversize');
  });

  it('oversize is detected before the value ends (unterminated flood)', async () => {
    await expectReadError(readJsonFromChunks([Buffer.from('{"a":"'), Buffer.alloc(2000, 0x61)], { maxBytes: 1000, timeoutMs: 2000 }), 'oversize');
  });

  it('truncated JSON then FIN', async () => {
    await expectReadError(readJsonFromChunks([Buffer.from('{"a":[1,2')], undefined, true), 'eof');
  });

  it('FIN before any byte', async () => {
    await expectReadError(readJsonFromChunks([], undefined, true), 'eof');
  });

  it('malformed but balanced JSON', async () => {
    await expectReadError(readJsonFromChunks([Buffer.from('{"a":}')]), 'syntax');
    await expectReadError(readJsonFromChunks([Buffer.from('{"a" 1}')]), 'syntax');
  });

  it('non-object JSON values are read as what they are', async () => {
    assert.deepEqual((await readJsonFromChunks([Buffer.from('[1,2] ')])).result.value, [1, 2]);
    assert.equal((await readJsonFromChunks([Buffer.from('"s"')])).result.value, 's');
    assert.equal((await readJsonFromChunks([Buffer.from('42')], undefined, true)).result.value, 42);
  });

  it('read deadline', async () => {
    await expectReadError(readJsonFromChunks([Buffer.from('{"a":')], { maxBytes: 100, timeoutMs: 30 }), 'timeout');
  });

  it('destroyed stream', async () => {
    const s = new PassThrough();
    const r = new StreamReader(s);
    const p = r.readJson({ maxBytes: 100, timeoutMs: 1000 });
    s.write('{"a"');
    s.destroy(new Error('reset'));
    await expectReadError(p, 'closed');
  });

  it('property: any object split at arbitrary points parses to the same value', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.boolean(),
        async (obj, cuts, newline) => {
          const buf = Buffer.from(JSON.stringify(obj) + (newline ? '\n' : ''));
          const { result } = await readJsonFromChunks(splitAt(buf, cuts));
          assert.deepEqual(result.value, JSON.parse(buf.toString()));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: the scanner ends exactly where the value ends, for any chunking', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.nat(), { maxLength: 8 }), (v, cuts) => {
        const text = JSON.stringify(v);
        if (!text.startsWith('{') && !text.startsWith('[') && !text.startsWith('"')) return; // scalars end at a delimiter
        const buf = Buffer.from(text + ' {');
        const sc = new JsonValueScanner();
        let offset = 0;
        for (const c of splitAt(buf, cuts)) {
          const end = sc.push(c);
          if (end >= 0) {
            assert.equal(offset + end, Buffer.byteLength(text));
            return;
          }
          offset += c.length;
        }
        assert.fail('value end not found');
      }),
      { numRuns: 300 },
    );
  });
});

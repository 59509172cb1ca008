import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, json, type TestApp } from '../helpers/app.js';
import { expectError, OPERATION_ID } from '../helpers/assertions.js';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

describe('every response', () => {
  it('carries a fresh Ngrok-Operation-Id and Cache-Control: no-store, on success and on error', async () => {
    const ok = await t.call({ method: 'GET', url: '/credentials' });
    const notFound = await t.call({ method: 'GET', url: '/nowhere' });
    const health = await t.call({ method: 'GET', url: '/healthz', key: null, version: false });
    for (const response of [ok, notFound, health]) {
      assert.match(String(response.headers['ngrok-operation-id']), OPERATION_ID);
      assert.equal(response.headers['cache-control'], 'no-store');
    }
    assert.notEqual(ok.headers['ngrok-operation-id'], notFound.headers['ngrok-operation-id']);
    assert.equal(ok.headers['content-type'], 'application/json');
  });

  it('puts the operation id of the response into the error body', async () => {
    const response = await t.call({ method: 'GET', url: '/credentials/cr_nope' });
    assert.equal(json<{ details: { operation_id: string } }>(response).details.operation_id, response.headers['ngrok-operation-id']);
  });
});

describe('step 1: routing', () => {
  it('answers an unknown path with the generic 404 and no error_code, before authentication', async () => {
    const response = await t.call({ method: 'GET', url: '/nowhere', key: null, version: false });
    expectError(response, 404, undefined);
    assert.equal(json(response).msg, 'Resource not found');
  });

  it('matches paths exactly: a trailing slash or another letter case is 404', async () => {
    expectError(await t.call({ method: 'GET', url: '/credentials/' }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: '/Credentials' }), 404, undefined);
    expectError(await t.call({ method: 'GET', url: '/credentials//x' }), 404, undefined);
  });

  it('answers a wrong method on a known path with 405, an Allow header and no error_code', async () => {
    const response = await t.call({ method: 'PUT', url: '/credentials', key: null });
    expectError(response, 405, undefined);
    assert.equal(response.headers.allow, 'GET, POST');
    const item = await t.call({ method: 'POST', url: '/credentials/cr_x' });
    expectError(item, 405, undefined);
    assert.equal(item.headers.allow, 'DELETE, GET, PATCH');
  });
});

describe('step 2: authentication', () => {
  it('401 ERR_NGROK_200 without an Authorization header', async () => {
    const response = await t.call({ method: 'GET', url: '/credentials', key: null });
    expectError(response, 401, 'ERR_NGROK_200');
    assert.equal(response.headers['www-authenticate'], 'Bearer');
  });

  for (const header of ['Basic abc', 'Bearer', 'Bearer ', 'token abc', 'Bearer a b', 'Bearerabc']) {
    it(`401 ERR_NGROK_201 for the header ${JSON.stringify(header)}`, async () => {
      const response = await t.call({ method: 'GET', url: '/credentials', key: null, headers: { authorization: header } });
      expectError(response, 401, 'ERR_NGROK_201');
      assert.equal(response.headers['www-authenticate'], 'Bearer');
    });
  }

  it('accepts the scheme in any letter case', async () => {
    const response = await t.call({ method: 'GET', url: '/credentials', key: null, headers: { authorization: `bEaReR ${t.admin.key}` } });
    assert.equal(response.statusCode, 200);
  });

  for (const key of ['short', '3MRciVIJHhDI4xItErU3nh8appx-dsZP3ZI8kfegrQ4WOjQJX', '3MRciVIJHhDI4xItErU3nh8app_dsZP3ZI8kfegrQ4WOjQJX', '3MRciVIJHhDI4xItErU3nh8appx_dsZP3ZI8kfegrQ4WOjQJXyz', '3MRciVIJHhDI4xItErU3nh8appx_dsZP3ZI8kfegrQ4WO!QJX']) {
    it(`401 ERR_NGROK_202 for the malformed key ${key.slice(0, 12)}…`, async () => {
      const response = await t.call({ method: 'GET', url: '/credentials', key });
      expectError(response, 401, 'ERR_NGROK_202');
      assert.equal(response.headers['www-authenticate'], 'Bearer');
      assert.ok(!response.body.includes(key), 'the presented key is never echoed in full');
    });
  }

  it('401 ERR_NGROK_203 for a well-formed key that does not exist, without echoing it', async () => {
    const key = `${t.admin.key.slice(0, 27)}_${'A'.repeat(21)}`;
    const response = await t.call({ method: 'GET', url: '/credentials', key });
    expectError(response, 401, 'ERR_NGROK_203');
    assert.equal(response.headers['www-authenticate'], 'Bearer');
    // (Ids in details share the KSUID's timestamp prefix, so the message is what is checked.)
    assert.ok(!(json(response).msg as string).includes(key.slice(0, 9)), 'at most 8 characters of the key appear');
    const other = await t.call({ method: 'GET', url: '/credentials', key: '2'.repeat(27) + '_' + 'b'.repeat(20) });
    expectError(other, 401, 'ERR_NGROK_203');
  });

  it('401 ERR_NGROK_207 for a tunnel credential token, and 203 once that credential is deleted', async () => {
    const created = json<{ id: string; token: string }>(await t.call({ method: 'POST', url: '/credentials', body: {} }));
    const misuse = await t.call({ method: 'GET', url: '/credentials', key: created.token });
    expectError(misuse, 401, 'ERR_NGROK_207');
    assert.equal(misuse.headers['www-authenticate'], 'Bearer');
    assert.ok(!misuse.body.includes(created.token));
    await t.call({ method: 'DELETE', url: `/credentials/${created.id}` });
    expectError(await t.call({ method: 'GET', url: '/credentials', key: created.token }), 401, 'ERR_NGROK_203');
  });

  it('authenticates before checking the version', async () => {
    expectError(await t.call({ method: 'GET', url: '/credentials', key: null, version: false }), 401, 'ERR_NGROK_200');
  });
});

describe('step 4: version', () => {
  it('400 ERR_NGROK_218 without a version header', async () => {
    const response = await t.call({ method: 'GET', url: '/credentials', version: false });
    expectError(response, 400, 'ERR_NGROK_218');
    assert.match(json(response).msg as string, /Service-Version/);
  });

  it('accepts Service-Version or Ngrok-Version, in any header-name case', async () => {
    for (const name of ['Service-Version', 'service-version', 'Ngrok-Version', 'NGROK-VERSION']) {
      const response = await t.call({ method: 'GET', url: '/credentials', version: false, headers: { [name]: '2' } });
      assert.equal(response.statusCode, 200, name);
    }
    const both = await t.call({ method: 'GET', url: '/credentials', version: false, headers: { 'service-version': '2', 'ngrok-version': '2' } });
    assert.equal(both.statusCode, 200);
  });

  for (const [name, headers] of [
    ['another version', { 'service-version': '1' }],
    ['an empty Service-Version', { 'service-version': '' }],
    ['a padded value', { 'service-version': '2.0' }],
    ['another Ngrok-Version', { 'ngrok-version': '3' }],
    ['the two headers disagreeing', { 'service-version': '2', 'ngrok-version': '1' }],
  ] as const) {
    it(`400 ERR_NGROK_217 for ${name}`, async () => {
      expectError(await t.call({ method: 'GET', url: '/credentials', version: false, headers: { ...headers } }), 400, 'ERR_NGROK_217');
    });
  }

  it('checks the version before the body', async () => {
    const response = await t.call({ method: 'POST', url: '/credentials', version: false, body: '{bad' });
    expectError(response, 400, 'ERR_NGROK_218');
  });
});

describe('step 5: body framing', () => {
  it('400 ERR_NGROK_216 for a non-empty body without Content-Type', async () => {
    const response = await t.call({ method: 'POST', url: '/credentials', payload: '{}', headers: {} });
    expectError(response, 400, 'ERR_NGROK_216');
  });

  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'garbage', 'application/json; charset=latin1']) {
    it(`415 ERR_NGROK_210 for Content-Type ${type}`, async () => {
      const response = await t.call({ method: 'POST', url: '/credentials', body: '{}', headers: { 'content-type': type } });
      expectError(response, 415, 'ERR_NGROK_210');
    });
  }

  for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8', 'application/json; charset="utf-8"']) {
    it(`accepts Content-Type ${type}`, async () => {
      const response = await t.call({ method: 'POST', url: '/credentials', body: '{}', headers: { 'content-type': type } });
      assert.equal(response.statusCode, 201);
    });
  }

  for (const [name, body] of [
    ['broken JSON', '{"description":'],
    ['trailing garbage', '{} x'],
    ['a single quote string', "{'a':1}"],
  ] as const) {
    it(`400 ERR_NGROK_213 for ${name}`, async () => {
      expectError(await t.call({ method: 'POST', url: '/credentials', body }), 400, 'ERR_NGROK_213');
    });
  }

  it('400 ERR_NGROK_213 for bytes that are not UTF-8', async () => {
    const body = Buffer.concat([Buffer.from('{"description":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    expectError(await t.call({ method: 'POST', url: '/credentials', body }), 400, 'ERR_NGROK_213');
  });

  for (const body of ['[]', '"text"', '42', 'null', 'true']) {
    it(`400 ERR_NGROK_215 for the JSON ${body}, which is not an object`, async () => {
      expectError(await t.call({ method: 'POST', url: '/credentials', body }), 400, 'ERR_NGROK_215');
    });
  }

  it('413 without error_code above 1 MiB, and accepts a body of exactly 1 MiB', async () => {
    const over = `{"metadata":"${'x'.repeat(1024 * 1024)}"}`;
    expectError(await t.call({ method: 'POST', url: '/credentials', body: over }), 413, undefined);
    const padding = 1024 * 1024 - '{"description":"x"}'.length;
    const exact = `{"description":"x"${' '.repeat(padding)}}`;
    assert.equal(Buffer.byteLength(exact), 1024 * 1024);
    assert.equal((await t.call({ method: 'POST', url: '/credentials', body: exact })).statusCode, 201);
  });

  it('treats an empty body as {}', async () => {
    const response = await t.call({ method: 'POST', url: '/credentials', payload: '', headers: { 'content-type': 'application/json' } });
    assert.equal(response.statusCode, 201);
    const bare = await t.call({ method: 'POST', url: '/credentials' });
    assert.equal(bare.statusCode, 201);
  });

  it('accepts a Content-Type without a body on GET and DELETE (the npm client sends one)', async () => {
    const get = await t.call({ method: 'GET', url: '/credentials', headers: { 'content-type': 'application/json' } });
    assert.equal(get.statusCode, 200);
    const id = json<{ id: string }>(await t.call({ method: 'POST', url: '/credentials' })).id;
    const del = await t.call({ method: 'DELETE', url: `/credentials/${id}`, headers: { 'content-type': 'application/json' } });
    assert.equal(del.statusCode, 204);
  });

  it('400 ERR_NGROK_211 for a body on GET or DELETE', async () => {
    expectError(await t.call({ method: 'GET', url: '/credentials', body: '{}' }), 400, 'ERR_NGROK_211');
    const id = json<{ id: string }>(await t.call({ method: 'POST', url: '/credentials' })).id;
    expectError(await t.call({ method: 'DELETE', url: `/credentials/${id}`, body: '{}' }), 400, 'ERR_NGROK_211');
    assert.equal((await t.call({ method: 'GET', url: `/credentials/${id}` })).statusCode, 200, 'the rejected DELETE changed nothing');
  });
});

describe('step 6: query', () => {
  it('400 ERR_NGROK_231 for an unknown parameter, naming it', async () => {
    const response = await t.call({ method: 'GET', url: '/credentials?color=red' });
    expectError(response, 400, 'ERR_NGROK_231');
    assert.equal(json<{ details: { param: string } }>(response).details.param, 'color');
  });

  it('400 ERR_NGROK_231 for an unknown parameter given twice, and on routes without parameters', async () => {
    expectError(await t.call({ method: 'GET', url: '/credentials?x=1&x=2' }), 400, 'ERR_NGROK_231');
    expectError(await t.call({ method: 'POST', url: '/credentials?limit=1' }), 400, 'ERR_NGROK_231');
    expectError(await t.call({ method: 'GET', url: '/credentials/cr_x?__proto__=1' }), 400, 'ERR_NGROK_231');
  });

  it('400 ERR_NGROK_232 for a parameter given twice', async () => {
    expectError(await t.call({ method: 'GET', url: '/credentials?limit=1&limit=2' }), 400, 'ERR_NGROK_232');
  });

  it('checks the query before the body fields', async () => {
    const response = await t.call({ method: 'POST', url: '/credentials?x=1', body: { nope: 1 } });
    expectError(response, 400, 'ERR_NGROK_231');
  });
});

describe('secrets in errors (SPEC §8)', () => {
  it('a key or token put where an id, a parameter or a field name goes is shown by 8 characters only', async () => {
    const created = json<{ token: string }>(await t.call({ method: 'POST', url: '/credentials', body: {} }));
    const secret = created.token;
    assert.ok(secret.length > 40);
    const answers = [
      await t.call({ method: 'GET', url: `/credentials?before_id=${secret}` }),
      await t.call({ method: 'GET', url: `/credentials?${secret}=1` }),
      await t.call({ method: 'POST', url: '/credentials', body: { [secret]: 1 } }),
      await t.call({ method: 'GET', url: `/credentials/${secret}` }),
    ];
    for (const response of answers) {
      assert.ok(response.statusCode >= 400, response.body);
      assert.ok(!response.body.includes(secret), `the whole secret is echoed: ${response.body}`);
      assert.ok(!response.body.includes(secret.slice(8, 30)), `its hidden part is echoed: ${response.body}`);
    }
    // what is shown still names the input by its beginning
    assert.equal(json<{ details: { param: string } }>(answers[1]!).details.param, `${secret.slice(0, 8)}…`);
  });
});

describe('step 7: fields', () => {
  it('400 ERR_NGROK_214 for an unknown field, naming it and the supported ones', async () => {
    const response = await t.call({ method: 'POST', url: '/credentials', body: { colour: 'red' } });
    expectError(response, 400, 'ERR_NGROK_214');
    const body = json<{ msg: string; details: { param: string } }>(response);
    assert.equal(body.details.param, 'colour');
    assert.match(body.msg, /colour/);
    assert.match(body.msg, /description, metadata, acl, owner_id/);
  });

  it('an unknown field whose value is null is still unknown; __proto__ is just a field', async () => {
    expectError(await t.call({ method: 'POST', url: '/credentials', body: '{"colour":null}' }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'POST', url: '/credentials', body: '{"__proto__":{"admin":true}}' }), 400, 'ERR_NGROK_214');
    expectError(await t.call({ method: 'POST', url: '/credentials', body: '{"constructor":1}' }), 400, 'ERR_NGROK_214');
  });

  for (const [field, value] of [
    ['description', 5],
    ['metadata', true],
    ['acl', 'bind:*'],
    ['acl', { a: 1 }],
    ['owner_id', 7],
    ['description', ['x']],
  ] as const) {
    it(`400 ERR_NGROK_215 for ${field} = ${JSON.stringify(value)}, naming the field`, async () => {
      const response = await t.call({ method: 'POST', url: '/credentials', body: { [field]: value } });
      expectError(response, 400, 'ERR_NGROK_215');
      assert.equal(json<{ details: { param: string } }>(response).details.param, field);
    });
  }

  it('the last of two equal keys wins', async () => {
    const response = await t.call({ method: 'POST', url: '/credentials', body: '{"description":"first","description":"second"}' });
    assert.equal(json(response).description, 'second');
  });

  it('refuses text that cannot be stored faithfully: unpaired surrogates and NUL', async () => {
    expectError(await t.call({ method: 'POST', url: '/credentials', body: '{"description":"\\ud800"}' }), 400, 'ERR_NGROK_215');
    expectError(await t.call({ method: 'POST', url: '/credentials', body: '{"metadata":"a\\u0000b"}' }), 400, 'ERR_NGROK_215');
  });

  it('answers the same characters in an ACL rule as an invalid rule (600), and in a hostport with 215', async () => {
    for (const rule of ['bind:a\\u0000.example.com', 'bind:\\ud800.example.com']) {
      expectError(await t.call({ method: 'POST', url: '/credentials', body: `{"acl":["${rule}"]}` }), 400, 'ERR_NGROK_600');
      const error = expectError(await t.call({ method: 'POST', url: '/edges/tls', body: `{"hostports":["${rule.slice(5)}:443"]}` }), 400, 'ERR_NGROK_215');
      assert.equal((error.details as Record<string, string>).param, 'hostports');
    }
  });
});

describe('operational endpoints', () => {
  it('need neither an API key nor a version header', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json']) {
      const response = await t.call({ method: 'GET', url, key: null, version: false });
      assert.equal(response.statusCode, 200, url);
      assert.equal(response.headers['content-type'], 'application/json');
    }
    assert.deepEqual(json(await t.call({ method: 'GET', url: '/readyz', key: null })), { status: 'ready' });
  });
});

describe('logging', () => {
  it('writes one JSON line per request with its operation id, and never a secret', async () => {
    const before = t.logs.length;
    const response = await t.call({ method: 'POST', url: '/credentials', body: { description: 'logged' } });
    const token = json<{ token: string }>(response).token;
    const lines = t.logs.slice(before).map((line) => JSON.parse(line) as Record<string, unknown>);
    const mine = lines.filter((line) => line.operation_id === response.headers['ngrok-operation-id']);
    assert.equal(mine.length, 1);
    assert.equal(mine[0]!.status, 201);
    assert.equal(mine[0]!.route, '/credentials');
    const all = t.logs.join('\n');
    assert.ok(!all.includes(token));
    assert.ok(!all.includes(t.admin.key));
    assert.ok(!all.includes(t.admin.key.slice(28)), 'not even the random half of the key');
  });
});

describe('paths the router cannot decode', () => {
  it('answers a bad percent-encoding or an over-long id as an unknown path, with the usual headers', async () => {
    for (const url of ['/credentials/%ZZ', '/credentials/cr_%E0%A4%A', `/credentials/${'A'.repeat(2000)}`, `/edges/tls/${'x'.repeat(600)}/traffic_policy`]) {
      const response = await t.call({ method: 'GET', url });
      expectError(response, 404, undefined);
      assert.equal(response.headers['cache-control'], 'no-store');
    }
  });
});

describe('step 1 comes first', () => {
  it('answers an unknown path or a wrong method before reading any body or checking the key', async () => {
    expectError(await t.call({ method: 'POST', url: '/nowhere', key: null, body: '{' }), 404, undefined);
    expectError(await t.call({ method: 'POST', url: '/nowhere', key: null, body: 'x'.repeat(1024 * 1024 + 1) }), 404, undefined);
    const wrong = await t.call({ method: 'DELETE', url: '/edges/tls', key: null, body: '{}', headers: { 'content-type': 'text/plain' } });
    expectError(wrong, 405, undefined);
    assert.equal(wrong.headers.allow, 'GET, POST');
  });

  it('treats an empty path parameter as an unknown path', async () => {
    expectError(await t.call({ method: 'GET', url: '/credentials/', key: null }), 404, undefined);
    expectError(await t.call({ method: 'PATCH', url: '/credentials/', body: { x: 1 } }), 404, undefined);
    expectError(await t.call({ method: 'PUT', url: '/edges/tls//traffic_policy', body: {} }), 404, undefined);
  });

  it('routes a percent-encoded path the same for every method', async () => {
    assert.equal((await t.call({ method: 'GET', url: '/%63redentials' })).statusCode, 200);
    expectError(await t.call({ method: 'PUT', url: '/%63redentials' }), 405, undefined);
  });
});

describe('the Host header', () => {
  it('must be a host[:port] when it makes the uri fields', async () => {
    for (const host of ['evil.example/x?y#', 'a b', 'x@y.example']) {
      expectError(await t.call({ method: 'POST', url: '/credentials', body: {}, headers: { host } }), 400, undefined);
    }
    for (const host of ['api.example.com', 'burrow_api:8080', '10.0.0.1:80', '[::1]:8080']) {
      const created = await t.call({ method: 'POST', url: '/credentials', body: {}, headers: { host } });
      assert.equal(created.statusCode, 201, host);
      assert.ok(json<{ uri: string }>(created).uri.startsWith(`http://${host}/credentials/cr_`));
    }
  });
});

describe('a GET with a chunked body', () => {
  it('is refused only when the body is not empty', async () => {
    const empty = await t.call({ method: 'GET', url: '/credentials', headers: { 'transfer-encoding': 'chunked' }, payload: '' });
    assert.equal(empty.statusCode, 200);
  });
});

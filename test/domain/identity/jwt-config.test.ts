// @test-pass sqlite
// IDENTITY.md §3: jwt-validation's configuration, checked when the policy is written, with the
// reference's codes; every limit just inside (valid) and just past (refused).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validatePolicy } from '../../../src/domain/policy/index.js';
import { JWT_LIMITS as L } from '../../../src/domain/identity/jwt-config.js';

const BASE = {
  issuer: { allow_list: [{ value: 'https://issuer.example/' }] },
  audience: { allow_list: [{ value: 'urn:example:api' }] },
  http: { tokens: [{ type: 'access_token', method: 'header', name: 'Authorization', prefix: 'Bearer ' }] },
  jws: { allowed_algorithms: ['RS256', 'ES256'], keys: { sources: { additional_jkus: ['https://issuer.example/jwks.json'] } } },
};

type Config = Record<string, unknown>;

function check(config: unknown, phase = 'on_http_request', endpoint: 'http' | 'tcp' = 'http'): { code: string; message: string } {
  const document = JSON.stringify({ [phase]: [{ actions: [config === undefined ? { type: 'jwt-validation' } : { type: 'jwt-validation', config }] }] });
  const result = validatePolicy(document, { endpoint, subject: 'endpoint' });
  return result.ok ? { code: 'ok', message: '' } : result.error;
}

const code = (config: unknown) => check(config).code;
const withField = (key: string, value: unknown): Config => ({ ...BASE, [key]: value });
const jws = (value: Config) => withField('jws', { ...BASE.jws, ...value });
const token = (value: Config) => withField('http', { tokens: [{ ...BASE.http.tokens[0], ...value }] });
const allow = (values: string[]) => ({ allow_list: values.map((value) => ({ value })) });
const jkus = (urls: string[]) => jws({ keys: { sources: { additional_jkus: urls } } });
const many = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i));

const cases: Array<[string, unknown, string]> = [
  ['the reference example', BASE, 'ok'],
  ['no audience (optional)', { ...BASE, audience: undefined }, 'ok'],
  ['keys and sources as lists (the field table)', jws({ keys: [{ identification: [{ token_claims: ['kid'] }], sources: [{ additional_jkus: ['https://a.example/k'] }] }] }), 'ok'],
  ['no config', undefined, 'ERR_NGROK_7171'],
  ['config not a mapping', ['x'], 'ERR_NGROK_2203'],
  ['an unknown key', { ...BASE, extra: 1 }, 'ERR_NGROK_2203'],
  ['an unknown key in a token', token({ where: 'x' }), 'ERR_NGROK_2203'],
  ['issuer missing', { ...BASE, issuer: undefined }, 'ERR_NGROK_7172'],
  ['issuer allow list empty', withField('issuer', allow([])), 'ERR_NGROK_7172'],
  ['issuer not a URL', withField('issuer', allow(['not a url'])), 'ERR_NGROK_7173'],
  ['issuer empty', withField('issuer', allow([''])), 'ERR_NGROK_7173'],
  ['issuer at the byte limit', withField('issuer', allow([`https://i.example/${'a'.repeat(L.valueBytes - 18)}`])), 'ok'],
  ['issuer past the byte limit', withField('issuer', allow([`https://i.example/${'a'.repeat(L.valueBytes - 17)}`])), 'ERR_NGROK_7173'],
  ['issuer twice', withField('issuer', allow(['https://a.example', 'https://a.example'])), 'ERR_NGROK_7187'],
  ['issuers at the limit', withField('issuer', allow(many(L.issuers, (i) => `https://i${i}.example`))), 'ok'],
  ['issuers past the limit', withField('issuer', allow(many(L.issuers + 1, (i) => `https://i${i}.example`))), 'ERR_NGROK_7171'],
  ['issuer interpolated', withField('issuer', allow(['${req.host}'])), 'ERR_NGROK_7171'],
  ['issuer value a number', withField('issuer', { allow_list: [{ value: 7 }] }), 'ERR_NGROK_2203'],
  ['audience allow list empty', withField('audience', allow([])), 'ERR_NGROK_7174'],
  ['audience empty', withField('audience', allow([''])), 'ERR_NGROK_7175'],
  ['audience twice', withField('audience', allow(['a', 'a'])), 'ERR_NGROK_7188'],
  ['audiences at the limit', withField('audience', allow(many(L.audiences, (i) => `a${i}`))), 'ok'],
  ['audiences past the limit', withField('audience', allow(many(L.audiences + 1, (i) => `a${i}`))), 'ERR_NGROK_7171'],
  ['http missing', { ...BASE, http: undefined }, 'ERR_NGROK_7178'],
  ['no tokens', withField('http', { tokens: [] }), 'ERR_NGROK_7178'],
  ['tokens at the limit', withField('http', { tokens: many(L.tokens, (i) => `x-t${i}`).map((name) => ({ type: 'jwt', method: 'header', name })) }), 'ok'],
  ['tokens past the limit', withField('http', { tokens: many(L.tokens + 1, (i) => `x-t${i}`).map((name) => ({ type: 'jwt', method: 'header', name })) }), 'ERR_NGROK_7171'],
  ['every token type', withField('http', { tokens: ['id_token', 'access_token', 'at+jwt', 'it+jwt', 'plain', 'jwt'].map((type, i) => ({ type, method: 'header', name: `x-${i}` })) }), 'ok'],
  ['an unknown token type', token({ type: 'saml' }), 'ERR_NGROK_7169'],
  ['token type missing', token({ type: undefined }), 'ERR_NGROK_7169'],
  ['token method query', token({ method: 'query' }), 'ERR_NGROK_7170'],
  ['body token', token({ method: 'body', name: '_id_token', prefix: undefined }), 'ok'],
  ['token name missing', token({ name: undefined }), 'ERR_NGROK_7180'],
  ['header name with a space', token({ name: 'x y' }), 'ERR_NGROK_7180'],
  ['body field name with a space', token({ method: 'body', name: 'id token' }), 'ok'],
  ['name at the byte limit', token({ name: 'x'.repeat(L.nameBytes) }), 'ok'],
  ['name past the byte limit', token({ name: 'x'.repeat(L.nameBytes + 1) }), 'ERR_NGROK_7180'],
  ['prefix at the byte limit', token({ prefix: 'p'.repeat(L.prefixBytes) }), 'ok'],
  ['prefix past the byte limit', token({ prefix: 'p'.repeat(L.prefixBytes + 1) }), 'ERR_NGROK_7181'],
  ['prefix with a line break', token({ prefix: 'Bearer\n' }), 'ERR_NGROK_7181'],
  ['same header twice (any case)', withField('http', { tokens: [{ type: 'jwt', method: 'header', name: 'X-T' }, { type: 'jwt', method: 'header', name: 'x-t' }] }), 'ERR_NGROK_7189'],
  ['same name in header and body', withField('http', { tokens: [{ type: 'jwt', method: 'header', name: 'tok' }, { type: 'jwt', method: 'body', name: 'tok' }] }), 'ok'],
  ['jws missing', { ...BASE, jws: undefined }, 'ERR_NGROK_7176'],
  ['no algorithm', jws({ allowed_algorithms: [] }), 'ERR_NGROK_7176'],
  ['alg none', jws({ allowed_algorithms: ['none'] }), 'ERR_NGROK_7177'],
  ['alg NONE', jws({ allowed_algorithms: ['RS256', 'NONE'] }), 'ERR_NGROK_7177'],
  ['HS256 (symmetric)', jws({ allowed_algorithms: ['HS256'] }), 'ERR_NGROK_7177'],
  ['an unknown algorithm', jws({ allowed_algorithms: ['RS1'] }), 'ERR_NGROK_7177'],
  ['every asymmetric algorithm', jws({ allowed_algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] }), 'ok'],
  ['algorithm twice', jws({ allowed_algorithms: ['RS256', 'RS256'] }), 'ERR_NGROK_7190'],
  ['keys missing', jws({ keys: undefined }), 'ERR_NGROK_7184'],
  ['sources missing', jws({ keys: { identification: [{ token_claims: ['kid'] }] } }), 'ERR_NGROK_7184'],
  ['no jku', jkus([]), 'ERR_NGROK_7184'],
  ['a jku that is not a URL', jkus(['jwks.json']), 'ERR_NGROK_7185'],
  ['a jku over ftp', jkus(['ftp://a.example/jwks']), 'ERR_NGROK_7185'],
  ['a jku with credentials', jkus(['https://u:p@a.example/jwks']), 'ERR_NGROK_7185'],
  ['an http jku', jkus(['http://127.0.0.1:8080/jwks']), 'ok'],
  ['jku twice', jkus(['https://a.example/k', 'https://a.example/k']), 'ERR_NGROK_7192'],
  ['jkus at the limit', jkus(many(L.jkus, (i) => `https://a.example/${i}`)), 'ok'],
  ['jkus past the limit', jkus(many(L.jkus + 1, (i) => `https://a.example/${i}`)), 'ERR_NGROK_7171'],
  ['identification without claims', jws({ keys: { identification: [{ token_claims: [] }], sources: BASE.jws.keys.sources } }), 'ERR_NGROK_7182'],
  ['identification by x5t', jws({ keys: { identification: [{ token_claims: ['x5t'] }], sources: BASE.jws.keys.sources } }), 'ERR_NGROK_7183'],
  ['kid twice', jws({ keys: { identification: [{ token_claims: ['kid', 'kid'] }], sources: BASE.jws.keys.sources } }), 'ERR_NGROK_7191'],
];

describe('jwt-validation config', () => {
  for (const [name, config, expected] of cases) test(name, () => assert.equal(code(config), expected));

  test('runs in on_http_request only', () => {
    assert.equal(check(BASE, 'on_http_response').code, 'ERR_NGROK_2202');
    assert.equal(check(BASE, 'on_tcp_connect', 'tcp').code, 'ERR_NGROK_2202');
  });

  test('messages name the rule, the field and the value, never more', () => {
    const { message } = check(jws({ allowed_algorithms: ['RS256', 'none'] }));
    assert.match(message, /^Rule 1, action 1, line \d+: the "none" algorithm is invalid: "none" is not a signature/);
    assert.match(check(token({ method: 'query' })).message, /config\.http\.tokens, entry 1: the "query" token method is invalid/);
  });
});

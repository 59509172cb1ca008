// @test-pass sqlite
// verify-webhook (HTTP-POLICY.md §2): each provider's signature computed as the provider documents
// it, valid / tampered / missing / replayed, and the action's validation and results.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { compilePolicy, evaluateHttpRequest, RateBuckets, validatePolicy } from '../../../src/domain/policy/index.js';
import { verifyWebhook, WEBHOOK_PROVIDERS, type WebhookRequest } from '../../../src/domain/policy/webhooks.js';
import { httpsConnection } from '../../helpers/policy.js';

const NOW = Date.parse('2026-01-02T03:04:05Z');
const SECONDS = String(Math.floor(NOW / 1000));
const STALE = String(Math.floor(NOW / 1000) - 301);
const SECRET = 'whsec-topsecret-0123456789';
const BODY = Buffer.from('{"event":"push","ref":"refs/heads/main"}');
const URL = 'https://hooks.example.com/incoming?x=1';

const hmac = (alg: string, key: string | Buffer, data: string | Buffer) => createHmac(alg, key).update(data).digest();

function request(headers: Record<string, string>, body = BODY, url = URL): WebhookRequest {
  return { method: 'POST', url, headers: new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), [v]])), body };
}

/** Per provider: the headers a genuine delivery carries (signed with `secret`, at `ts`). */
const SIGNED: Record<string, (secret: string, body: Buffer, ts: string) => Record<string, string>> = {
  github: (s, b) => ({ 'X-Hub-Signature-256': `sha256=${hmac('sha256', s, b).toString('hex')}` }),
  stripe: (s, b, ts) => ({ 'Stripe-Signature': `t=${ts},v1=${hmac('sha256', s, `${ts}.${b.toString()}`).toString('hex')},v0=ignored` }),
  slack: (s, b, ts) => ({ 'X-Slack-Request-Timestamp': ts, 'X-Slack-Signature': `v0=${hmac('sha256', s, `v0:${ts}:${b.toString()}`).toString('hex')}` }),
  zoom: (s, b, ts) => ({ 'x-zm-request-timestamp': ts, 'x-zm-signature': `v0=${hmac('sha256', s, `v0:${ts}:${b.toString()}`).toString('hex')}` }),
  shopify: (s, b) => ({ 'X-Shopify-Hmac-Sha256': hmac('sha256', s, b).toString('base64') }),
  twilio: (s) => ({ 'X-Twilio-Signature': hmac('sha1', s, URL).toString('base64') }),
  linear: (s, b) => ({ 'Linear-Signature': hmac('sha256', s, b).toString('hex') }),
  gitlab: (s) => ({ 'X-Gitlab-Token': s }),
  square: (s, b) => ({ 'x-square-hmacsha256-signature': hmac('sha256', s, Buffer.concat([Buffer.from(URL), b])).toString('base64') }),
};
const svixKey = randomBytes(24);
const svixSecret = `whsec_${svixKey.toString('base64')}`;
const svixHeaders = (b: Buffer, ts: string) => ({ 'svix-id': 'msg_1', 'svix-timestamp': ts, 'svix-signature': `v1,bogus v1,${hmac('sha256', svixKey, `msg_1.${ts}.${b.toString()}`).toString('base64')}` });

describe('verify-webhook providers', () => {
  for (const [provider, sign] of Object.entries(SIGNED)) {
    test(`${provider}: valid passes, a tampered body or another secret fails, no header fails`, () => {
      assert.deepEqual(verifyWebhook(provider, SECRET, request(sign(SECRET, BODY, SECONDS)), NOW), { verified: true });
      if (provider !== 'gitlab' && provider !== 'twilio') {
        assert.equal(verifyWebhook(provider, SECRET, request(sign(SECRET, BODY, SECONDS), Buffer.from('{"event":"push!"}')), NOW).verified, false);
      }
      assert.equal(verifyWebhook(provider, SECRET, request(sign('another-secret', BODY, SECONDS)), NOW).verified, false);
      const missing = verifyWebhook(provider, SECRET, request({}), NOW);
      assert.equal(missing.verified, false);
      assert.ok(!JSON.stringify(missing).includes(SECRET), 'the secret is never in a message');
    });
  }

  for (const provider of ['stripe', 'slack', 'zoom']) {
    test(`${provider}: a timestamp over 5 minutes old is a replay`, () => {
      const verdict = verifyWebhook(provider, SECRET, request(SIGNED[provider]!(SECRET, BODY, STALE)), NOW);
      assert.equal(verdict.verified, false);
      assert.match(verdict.verified ? '' : verdict.message, /tolerance/);
      // just inside the tolerance
      assert.equal(verifyWebhook(provider, SECRET, request(SIGNED[provider]!(SECRET, BODY, String(Number(SECONDS) - 299))), NOW).verified, true);
    });
  }

  test('github: the older SHA-1 X-Hub-Signature is accepted too', () => {
    assert.equal(verifyWebhook('github', SECRET, request({ 'X-Hub-Signature': `sha1=${hmac('sha1', SECRET, BODY).toString('hex')}` }), NOW).verified, true);
  });

  test('twilio: form fields are signed sorted by name after the URL', () => {
    const body = Buffer.from('To=%2B15550001&From=%2B15550002&Body=hi+there');
    const signed = `${URL}Bodyhi thereFrom+15550002To+15550001`;
    const headers = { 'Content-Type': 'application/x-www-form-urlencoded', 'X-Twilio-Signature': hmac('sha1', SECRET, signed).toString('base64') };
    assert.equal(verifyWebhook('twilio', SECRET, request(headers, body), NOW).verified, true);
    assert.equal(verifyWebhook('twilio', SECRET, request(headers, Buffer.from('To=%2B15550001&Body=changed')), NOW).verified, false);
  });

  test('svix and clerk: whsec_ base64 key, any of several v1 signatures, replay refused', () => {
    for (const provider of ['svix', 'clerk']) {
      assert.equal(verifyWebhook(provider, svixSecret, request(svixHeaders(BODY, SECONDS)), NOW).verified, true);
      assert.equal(verifyWebhook(provider, svixSecret, request(svixHeaders(BODY, STALE)), NOW).verified, false);
      assert.equal(verifyWebhook(provider, svixSecret, request(svixHeaders(BODY, SECONDS), Buffer.from('x')), NOW).verified, false);
    }
  });

  test('every listed provider has a test here', () => {
    assert.deepEqual([...WEBHOOK_PROVIDERS].sort(), [...Object.keys(SIGNED), 'svix', 'clerk', 'facebook_graph_api', 'facebook_messenger', 'instagram', 'whatsapp'].sort());
  });
});

describe('verify-webhook validation', () => {
  const policy = (config: string) => validatePolicy(`on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: ${config}\n`, { endpoint: 'https', subject: 'endpoint' });

  test('provider and secret are required; enforce is a bool defaulting to true', () => {
    const ok = policy(`{provider: github, secret: "${SECRET}"}`);
    assert.ok(ok.ok);
    assert.deepEqual(ok.policy.phases.on_http_request[0]!.actions[0], { type: 'verify-webhook', config: { provider: 'github', secret: SECRET, enforce: true } });
    for (const [config, code, words] of [
      ['{secret: abc}', 'ERR_NGROK_2204', /needs config.provider/],
      ['{provider: github}', 'ERR_NGROK_2204', /needs config.secret/],
      [`{provider: github, secret: "${SECRET}", enforce: "no"}`, 'ERR_NGROK_2203', /enforce must be true or false/],
      [`{provider: github, secret: "${SECRET}", extra: 1}`, 'ERR_NGROK_2203', /unknown key/],
      [`{provider: github, secret: "${'s'.repeat(8193)}"}`, 'ERR_NGROK_2204', /longer than 8192/],
    ] as const) {
      const result = policy(config);
      assert.ok(!result.ok, config);
      assert.equal(result.error.code, code, config);
      assert.match(result.error.message, words);
    }
    assert.ok(policy(`{provider: github, secret: "${'s'.repeat(8192)}"}`).ok);
  });

  test('a provider burrow cannot verify is refused by name; the secret is never quoted', () => {
    const result = policy(`{provider: amazon_sns, secret: "${SECRET}"}`);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2204');
    assert.match(result.error.message, /"amazon_sns" is not a provider burrow can verify; it verifies github, /);
    assert.ok(!result.error.message.includes(SECRET));
  });

  test('not allowed in on_http_response', () => {
    const result = validatePolicy(`on_http_response:\n  - actions: [{type: verify-webhook, config: {provider: github, secret: x}}]\n`, { endpoint: 'https', subject: 'endpoint' });
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'ERR_NGROK_2202');
  });
});

describe('verify-webhook evaluation', () => {
  const CONNECTION = httpsConnection('hooks.example.com', NOW);
  const run = (document: string, headers: string[], body = BODY) => {
    const compiled = compilePolicy(document, { endpoint: 'https', subject: 'endpoint' });
    assert.ok(compiled.ok);
    return evaluateHttpRequest(compiled.program, {
      connection: CONNECTION,
      request: { method: 'POST', target: '/incoming?x=1', version: '1.1', scheme: 'https', headers: ['Host', 'hooks.example.com', ...headers], receivedAt: NOW, body },
      buckets: new RateBuckets(),
    });
  };
  const signature = ['X-Hub-Signature-256', `sha256=${hmac('sha256', SECRET, BODY).toString('hex')}`];
  const results = `  - actions: [{type: add-headers, config: {headers: {x-verified: "\${actions.ngrok.verify_webhook.verified}", x-why: "\${actions.ngrok.verify_webhook.error.message}"}}}]\n`;

  test('a valid signature passes, and the result variables say so', () => {
    const decision = run(`on_http_request:\n  - actions: [{type: verify-webhook, config: {provider: github, secret: "${SECRET}"}}]\n${results}`, signature);
    assert.equal(decision.answer, undefined);
    assert.deepEqual(decision.headers.slice(-4), ['x-verified', 'true', 'x-why', '']);
  });

  test('an invalid one is answered 403 (the secret not in the answer); with enforce false it passes, unverified', () => {
    const denied = run(`on_http_request:\n  - actions: [{type: verify-webhook, config: {provider: github, secret: "${SECRET}"}}]\n`, signature, Buffer.from('tampered'));
    assert.equal(denied.answer?.status, 403);
    assert.match(denied.answer!.body, /webhook signature could not be verified \(github: /);
    assert.ok(!denied.answer!.body.includes(SECRET));
    const passed = run(`on_http_request:\n  - actions: [{type: verify-webhook, config: {provider: github, secret: "${SECRET}", enforce: false}}]\n${results}`, [], BODY);
    assert.equal(passed.answer, undefined);
    assert.deepEqual(passed.headers.slice(-4), ['x-verified', 'false', 'x-why', 'the request has no X-Hub-Signature-256 header']);
  });

  test('the secret may interpolate (vars set earlier)', () => {
    const decision = run(
      `on_http_request:\n  - actions:\n      - {type: set-vars, config: {vars: [{key: "${SECRET}"}]}}\n      - {type: verify-webhook, config: {provider: github, secret: "\${vars.key}"}}\n`,
      signature,
    );
    assert.equal(decision.answer, undefined);
  });
});

describe('the WebhookVerification endpoint option', () => {
  test('becomes an enforced verify-webhook rule; bad values are refused by name without the secret', async () => {
    const { optionsDocument } = await import('../../../src/domain/policy/index.js');
    const served = optionsDocument({ WebhookVerification: { provider: 'github', secret: SECRET } });
    assert.ok(served.ok);
    assert.deepEqual(JSON.parse(served.document!).on_http_request, [{ name: 'WebhookVerification', actions: [{ type: 'verify-webhook', config: { provider: 'github', secret: SECRET } }] }]);
    for (const [value, words] of [
      [{ secret: SECRET }, /provider must name the provider/],
      [{ provider: 'github', secret: '', sealed_secret: [1, 2] }, /sealed secrets are not served/],
      [{ provider: 'github' }, /secret must be the signing secret/],
      [{ provider: 'github', secret: 'a${b}' }, /would read as an interpolation/],
    ] as const) {
      const refused = optionsDocument({ WebhookVerification: value });
      assert.ok(!refused.ok);
      assert.equal(refused.option, 'WebhookVerification');
      assert.match(refused.message, words);
      assert.ok(!refused.message.includes(SECRET));
    }
  });
});

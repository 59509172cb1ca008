// @test-pass sqlite
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileBindPolicy, NO_POLICY } from '../../../src/domain/tunnels/connection-policy.js';
import { policyMix } from '../../../src/domain/tunnels/policy-mix.js';

const answer = (body: string) => JSON.stringify({ on_http_request: [{ actions: [{ type: 'custom-response', config: { status_code: 200, body } }] }] });
const http = (policy: string | undefined, restriction: { allowCidrs: string[]; denyCidrs: string[] } | null = null) => compileBindPolicy(policy, restriction, 25, 'http');
const DENY_LOOPBACK = JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'restrict-ips', config: { deny: ['127.0.0.0/8'] } }] }] });

test('one policy, compiled once per bind, is the same policy: its text, not its object, decides', () => {
  assert.equal(policyMix([]), 'same');
  assert.equal(policyMix([NO_POLICY, NO_POLICY]), 'same');
  assert.equal(policyMix([http(answer('A')), http(answer('A'))]), 'same');
  // the same rules written in YAML
  assert.equal(policyMix([http(answer('A')), http('on_http_request:\n  - actions:\n      - type: custom-response\n        config:\n          status_code: 200\n          body: A\n')]), 'same');
  assert.equal(policyMix([NO_POLICY, http(undefined), http('')]), 'same', 'no policy at all, however said');
});

test('different HTTP phases: per request; a different on_tcp_connect or IP restriction: per connection', () => {
  assert.equal(policyMix([http(answer('A')), http(answer('B'))]), 'per-request');
  assert.equal(policyMix([http(answer('A')), NO_POLICY]), 'per-request');
  assert.equal(policyMix([http(DENY_LOOPBACK), NO_POLICY]), 'per-connection');
  assert.equal(policyMix([http(undefined, { allowCidrs: [], denyCidrs: ['10.0.0.0/8'] }), NO_POLICY]), 'per-connection');
  assert.equal(policyMix([http(answer('A')), http(answer('B')), http(DENY_LOOPBACK)]), 'per-connection', 'any difference of the connection phase wins');
  // an empty IP restriction is none
  assert.equal(policyMix([http(undefined, { allowCidrs: [], denyCidrs: [] }), NO_POLICY]), 'same');
});

test('TCP policies and the bind’s edge TLS count as the connection phase', () => {
  const tcp = (policy: string | undefined) => compileBindPolicy(policy, null, 25, 'tcp');
  assert.equal(policyMix([tcp(DENY_LOOPBACK), tcp(DENY_LOOPBACK)]), 'same');
  assert.equal(policyMix([tcp(DENY_LOOPBACK), tcp(undefined)]), 'per-connection');
  const mutual = { ...compileBindPolicy(undefined, null, 25, 'https'), edgeTls: { clientCas: ['-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----'] } };
  const other = { ...compileBindPolicy(undefined, null, 25, 'https'), edgeTls: { clientCas: ['-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----'] } };
  assert.equal(policyMix([mutual, { ...mutual }]), 'same');
  assert.equal(policyMix([mutual, { ipRestriction: undefined, policy: undefined, edgeTls: { ...mutual.edgeTls } }]), 'same', 'another instance’s tunnel, described without a policy source');
  assert.equal(policyMix([mutual, other]), 'per-connection');
  assert.equal(policyMix([mutual, compileBindPolicy(undefined, null, 25, 'https')]), 'per-connection');
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileBindPolicy, compilePolicySource } from '../../../src/domain/tunnels/connection-policy.js';
import { planTunnelPatch, type TunnelPatch } from '../../../src/domain/tunnels/tunnel-patch.js';

const NOTHING: TunnelPatch = { name: null, description: null, metadata: null, poolingEnabled: null, trafficPolicy: null };
const DENY = JSON.stringify({ on_tcp_connect: [{ actions: [{ type: 'deny' }] }] });
const bound = compileBindPolicy(undefined, { allowCidrs: ['10.0.0.0/8'], denyCidrs: [] }, 10, 'tcp');
const current = { labeled: false, poolingEnabled: false, policy: bound, kind: 'tcp' as const };

describe('planTunnelPatch', () => {
  it('a new traffic policy replaces the source other instances compile from, the bind\'s IP restriction kept', () => {
    const plan = planTunnelPatch({ ...NOTHING, trafficPolicy: DENY }, current, 10);
    assert.equal(plan.policy?.source?.trafficPolicy, DENY);
    assert.deepEqual(plan.policy?.source?.ipRestriction, bound.source?.ipRestriction);
    const elsewhere = compilePolicySource(plan.policy!.source!);
    assert.ok(elsewhere.policy, 'another instance compiles the patched policy');
    assert.ok(elsewhere.ipRestriction, 'and the bind\'s IP restriction');
  });

  it("a login's auth_cookie_domain must cover the endpoint's host (ERR_NGROK_2204), as at bind", () => {
    const login = (domain: string) => JSON.stringify({ on_http_request: [{ actions: [{ type: 'openid-connect', config: { issuer_url: 'https://id.example.com', client_id: 'a', client_secret: 'b', auth_cookie_domain: domain } }] }] });
    const https = { labeled: false, poolingEnabled: false, policy: compileBindPolicy(undefined, undefined, 10, 'https'), kind: 'https' as const, hostname: 'app.example.com' };
    assert.ok(planTunnelPatch({ ...NOTHING, trafficPolicy: login('example.com') }, https, 10).policy);
    assert.ok(planTunnelPatch({ ...NOTHING, trafficPolicy: login('app.example.com') }, https, 10).policy);
    assert.throws(() => planTunnelPatch({ ...NOTHING, trafficPolicy: login('other.example.com') }, https, 10), (error: { code?: number; message: string }) => error.code === 2204 && /must be the endpoint's host "app\.example\.com" or a parent domain/.test(error.message));
    const wildcard = { ...https, hostname: '*.example.com' };
    assert.ok(planTunnelPatch({ ...NOTHING, trafficPolicy: login('example.com') }, wildcard, 10).policy);
    assert.throws(() => planTunnelPatch({ ...NOTHING, trafficPolicy: login('a.example.com') }, wildcard, 10), /auth_cookie_domain/);
  });

  it('"" removes the policy there too', () => {
    const plan = planTunnelPatch({ ...NOTHING, trafficPolicy: '' }, { ...current, policy: planTunnelPatch({ ...NOTHING, trafficPolicy: DENY }, current, 10).policy! }, 10);
    assert.equal(compilePolicySource(plan.policy!.source!).policy, undefined);
  });
});

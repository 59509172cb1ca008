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

  it('"" removes the policy there too', () => {
    const plan = planTunnelPatch({ ...NOTHING, trafficPolicy: '' }, { ...current, policy: planTunnelPatch({ ...NOTHING, trafficPolicy: DENY }, current, 10).policy! }, 10);
    assert.equal(compilePolicySource(plan.policy!.source!).policy, undefined);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newBareId, newId } from '../../src/domain/ids.js';
import { AgentIngress } from '../../src/domain/tunnels/ingress.js';
import type { Endpoint } from '../../src/domain/tunnels/types.js';
import { endpointOf as endpointRowOf, TABLES_EDGE, TABLES_LIMITS, tunnelTables } from '../helpers/tunnel-tables.js';

/**
 * A pooled endpoint spread over instances (CLUSTER.md §2), over the real tables of both stores:
 * a pooled bind joins another instance's pooled endpoint of its account; the endpoint row and
 * the name's claim pass to an instance still serving the URL when their holder lets go, and go
 * with the last one; a join whose endpoint went meanwhile writes it again.
 */
const tables = tunnelTables();
const claimRow = tables.claimRow;

const ingressOf = (instanceId: string) => new AgentIngress(tables.repo, TABLES_EDGE, TABLES_LIMITS, instanceId);

/** An https endpoint on 443, pooled unless told. */
const endpointOf = (instanceId: string, accountId: string, host: string, poolingEnabled = true): Endpoint => endpointRowOf(instanceId, accountId, host, { poolingEnabled });

/** A tunnel of `instanceId` in the endpoint; resolves with its id. */
async function tunnelIn(endpoint: Endpoint, instanceId: string, sessionId = newBareId('ts')): Promise<string> {
  const id = newId('tn').id;
  await tables.repo.insertTunnel({ id, accountId: endpoint.accountId, sessionId, instanceId, proto: 'https', publicUrl: endpoint.url, labels: null, forwardsTo: 'f', metadata: '', startedAt: endpoint.createdAt, endpointId: endpoint.id });
  return id;
}

const endpointRow = (id: string) => tables.store.db.selectFrom('endpoints').select(['instance_id', 'session_id', 'url']).where('id', '=', id).executeTakeFirst();

/** Instance `a` holds a pooled endpoint and the claim of its name; `b` joined it with one tunnel. */
async function spread(host: string) {
  const [a, b, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
  const held = endpointOf(a, account, host);
  assert.deepEqual(await ingressOf(a).openEndpoint(held), { endpointId: held.id, joined: false });
  await tables.repo.claim(`host:${host}`, account, a, '');
  const aTunnel = await tunnelIn(held, a);
  const bSession = newBareId('ts');
  const bTunnel = await tunnelIn(held, b, bSession);
  return { a, b, account, held, aTunnel, bTunnel, bSession };
}

describe('joining another instance’s endpoint', () => {
  it('a pooled bind of the same account joins it; the row stays one', async () => {
    const [a, b, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const held = endpointOf(a, account, 'join.example.com');
    assert.ok(await tables.repo.insertEndpoint(held));
    assert.deepEqual(await ingressOf(b).openEndpoint(endpointOf(b, account, 'join.example.com')), { endpointId: held.id, joined: true });
    assert.equal((await tables.repo.endpointAt(held.url))?.instanceId, a);
  });

  it('refused (undefined: 334) when either side does not pool, or the account differs', async () => {
    const [a, b, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    assert.ok(await tables.repo.insertEndpoint(endpointOf(a, account, 'solo.example.com', false)));
    assert.equal(await ingressOf(b).openEndpoint(endpointOf(b, account, 'solo.example.com')), undefined);
    assert.ok(await tables.repo.insertEndpoint(endpointOf(a, account, 'pooled.example.com')));
    assert.equal(await ingressOf(b).openEndpoint(endpointOf(b, account, 'pooled.example.com', false)), undefined);
    assert.equal(await ingressOf(b).openEndpoint(endpointOf(b, newBareId('acct'), 'pooled.example.com')), undefined);
  });
});

describe('the holder letting go', () => {
  it('its last tunnel leaves: the row passes to the instance still serving, then goes with that one’s last', async () => {
    const { a, b, held, aTunnel, bTunnel, bSession } = await spread('pass.example.com');
    await tables.repo.deleteTunnel(aTunnel, a);
    await ingressOf(a).closeEndpoint(held.id, true);
    assert.deepEqual(await endpointRow(held.id), { instance_id: b, session_id: bSession, url: held.url });
    await ingressOf(a).closeEndpoint(held.id, true); // not the holder any more: nothing
    assert.equal((await endpointRow(held.id))?.instance_id, b);
    await tables.repo.deleteTunnel(bTunnel, b);
    await ingressOf(b).closeEndpoint(held.id, true);
    assert.equal(await endpointRow(held.id), undefined);
  });

  it('a joined instance’s last tunnel leaving does not touch the holder’s row', async () => {
    const { b, held, bTunnel, a } = await spread('joiner.example.com');
    await tables.repo.deleteTunnel(bTunnel, b);
    await ingressOf(b).closeEndpoint(held.id, true);
    assert.equal((await endpointRow(held.id))?.instance_id, a);
  });

  it('the name’s claim passes to the instance whose tunnels joined the endpoint, then goes', async () => {
    const { a, b, account, held, aTunnel, bTunnel } = await spread('claim.example.com');
    // as an unbind does: the tunnel row, then the endpoint, then the claim
    await tables.repo.deleteTunnel(aTunnel, a);
    await ingressOf(a).closeEndpoint(held.id, true);
    await tables.repo.release('host:claim.example.com', account, a);
    assert.deepEqual(await claimRow('host:claim.example.com'), { account_id: account, instance_id: b });
    await tables.repo.deleteTunnel(bTunnel, b);
    await ingressOf(b).closeEndpoint(held.id, true);
    await tables.repo.release('host:claim.example.com', account, b);
    assert.equal(await claimRow('host:claim.example.com'), undefined);
  });

  it('a drain or takeover (withdrawRoutes) passes the row and the claim too', async () => {
    const { a, b, account, held, aTunnel, bTunnel } = await spread('drain.example.com');
    await tables.repo.withdrawRoutes(a);
    const tunnels = await tables.store.db.selectFrom('tunnels').select('id').where('endpoint_id', '=', held.id).execute();
    assert.deepEqual(tunnels.map((row) => row.id), [bTunnel]);
    assert.notEqual(aTunnel, bTunnel);
    assert.equal((await endpointRow(held.id))?.instance_id, b);
    assert.deepEqual(await claimRow('host:drain.example.com'), { account_id: account, instance_id: b });
  });

  it('the holder’s session resuming elsewhere passes the row rather than removing it', async () => {
    const { b, held, bSession } = await spread('resume.example.com');
    await tables.repo.forgetSessionElsewhere(held.sessionId, newBareId('inst'));
    assert.deepEqual(await endpointRow(held.id), { instance_id: b, session_id: bSession, url: held.url });
  });
});

describe('a join meeting the holder’s release', () => {
  it('the endpoint and claim gone meanwhile: written again for the joining instance, with the same id', async () => {
    const [a, b, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const held = endpointOf(a, account, 'late.example.com');
    assert.ok(await tables.repo.insertEndpoint(held));
    await tables.repo.claim('host:late.example.com', account, a, '');
    const mine = endpointOf(b, account, 'late.example.com');
    await tunnelIn(held, b);
    // the holder let go before it could see the joining tunnel
    await tables.repo.deleteEndpoint(held.id);
    await tables.store.db.deleteFrom('tunnel_claims').where('key', '=', 'host:late.example.com').execute();
    await ingressOf(b).keepJoined(mine, held.id);
    assert.deepEqual(await endpointRow(held.id), { instance_id: b, session_id: mine.sessionId, url: held.url });
    assert.deepEqual(await claimRow('host:late.example.com'), { account_id: account, instance_id: b });
  });

  it('the endpoint still there: kept as it is', async () => {
    const { a, held, account, b } = await spread('kept.example.com');
    await ingressOf(b).keepJoined(endpointOf(b, account, 'kept.example.com'), held.id);
    assert.equal((await endpointRow(held.id))?.instance_id, a);
    assert.deepEqual(await claimRow('host:kept.example.com'), { account_id: account, instance_id: a });
  });

  it('the URL taken by another endpoint meanwhile: 334, and no claim is written', async () => {
    const [a, b, c, account] = [newBareId('inst'), newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const gone = endpointOf(a, account, 'retaken.example.com');
    assert.ok(await tables.repo.insertEndpoint(endpointOf(c, account, 'retaken.example.com')));
    await assert.rejects(ingressOf(b).keepJoined(endpointOf(b, account, 'retaken.example.com'), gone.id), (error: Error & { errorCode?: string }) => error.errorCode === 'ERR_NGROK_334');
    assert.equal(await claimRow('host:retaken.example.com'), undefined);
  });

  it('the name claimed by another account meanwhile: 320', async () => {
    const [a, b, account] = [newBareId('inst'), newBareId('inst'), newBareId('acct')];
    const held = endpointOf(a, account, 'stolen.example.com');
    await tables.repo.claim('host:stolen.example.com', newBareId('acct'), a, '');
    await assert.rejects(ingressOf(b).keepJoined(endpointOf(b, account, 'stolen.example.com'), held.id), (error: Error & { errorCode?: string }) => error.errorCode === 'ERR_NGROK_320');
    assert.equal(await endpointRow(held.id), undefined);
  });
});

import { AgentRefusal } from './agent-errors.js';
import type { AcceptedBind, BindPlacement } from './bind-plan.js';
import type { BindTarget, BoundTarget } from './binds.js';
import type { Endpoint, Tunnel } from './types.js';

/**
 * The bind use case, second half: claim → pool → insert → settle, as the plan says. Every step that
 * succeeded is undone, newest first, when a later one fails; nothing of a failed bind is left.
 */

/** Names and ports held for an account, across instances (320 / 309 when another holds one). */
export interface TargetClaims {
  /** Claims the target, choosing a free port for a random TCP bind. */
  claim(target: BindTarget, accountId: string): Promise<BoundTarget>;
  release(target: BoundTarget, accountId: string): Promise<void>;
}

/** The live pools of this instance, one per public URL; `P` is the pool a bind joins. */
export interface EndpointPools<P extends JoinedPool> {
  /** Whether a bind of `url` would find it free here: no pool yet, or a pooling one it may join. */
  mayJoin(url: string, pooling: boolean): boolean;
  /** Joins the URL's pool, or opens one and writes `endpoint` (334 when it may not). */
  join(url: string, pooling: boolean, endpoint: Endpoint, rival: string | undefined): Promise<P>;
  /** Closes the URL's pool when no tunnel is in it (a join whose tunnel never entered), with its endpoint row. */
  closeIfEmpty(url: string): Promise<void>;
  /**
   * Called once the tunnel row is written: a pool whose endpoint the bind did not open (`endpoint`
   * is the one it would have) keeps that endpoint's row and claim (334 / 320 when they are gone).
   */
  settle(pool: P, endpoint: Endpoint): Promise<void>;
}

export interface JoinedPool {
  readonly endpointId: string;
}

export interface BindPorts<P extends JoinedPool> {
  readonly claims: TargetClaims;
  readonly pools: EndpointPools<P>;
  insertTunnel(row: Tunnel): Promise<void>;
  deleteTunnel(id: string): Promise<void>;
  /**
   * Makes the bound tunnel reachable: puts it in its pool and its session. Called as soon as its
   * row is written, with no wait between (a pool left empty meanwhile would be closed); cannot fail.
   */
  serve(bind: ExecutedBind<P>): void;
}

/** A bind done: its rows written, its pool joined. */
export interface ExecutedBind<P extends JoinedPool> {
  readonly placement: BindPlacement;
  readonly row: Tunnel;
  readonly pool: P;
}

export async function executeBind<P extends JoinedPool>(plan: AcceptedBind, ports: BindPorts<P>): Promise<ExecutedBind<P>> {
  const undo: (() => Promise<void>)[] = [];
  try {
    const bound = await claimFirstFree(plan, ports);
    undo.push(() => ports.claims.release(bound, plan.accountId));
    const placement = plan.place(bound);
    const pool = await ports.pools.join(placement.url, plan.poolingEnabled, placement.endpoint, placement.rival);
    // this tunnel never joined the pool: only a pool it opened and left empty goes
    undo.push(() => ports.pools.closeIfEmpty(placement.url));
    const row = placement.tunnelRow(pool.endpointId);
    await ports.insertTunnel(row);
    undo.push(() => ports.deleteTunnel(row.id));
    await ports.pools.settle(pool, placement.endpoint);
    const done = { placement, row, pool };
    ports.serve(done);
    return done;
  } catch (error) {
    for (const step of undo.reverse()) await step();
    throw error;
  }
}

/** The first choice that is free: a remembered target taken meanwhile gives way to the bind's own. */
async function claimFirstFree<P extends JoinedPool>(plan: AcceptedBind, ports: BindPorts<P>): Promise<BoundTarget> {
  for (const choice of plan.choices) {
    if ('refusal' in choice) throw choice.refusal;
    if (!choice.remembered) return ports.claims.claim(choice.target, plan.accountId);
    try {
      const bound = await ports.claims.claim(choice.target, plan.accountId);
      // served meanwhile by another tunnel of the account: not free either
      if (ports.pools.mayJoin(plan.place(bound).url, plan.poolingEnabled)) return bound;
      await ports.claims.release(bound, plan.accountId);
    } catch (error) {
      // no longer free: a new URL, as for a first bind
      if (!(error instanceof AgentRefusal)) throw error;
    }
  }
  throw new Error('a bind plan ends with its own target or its refusal');
}

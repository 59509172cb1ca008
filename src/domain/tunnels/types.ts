import type { BindProto } from './binds.js';

/** An agent session (TUNNELS.md §2), as stored so that every instance's API can list it. */
export interface TunnelSession {
  readonly id: string;
  readonly accountId: string;
  readonly credentialId: string;
  readonly instanceId: string;
  readonly ip: string;
  readonly metadata: string;
  readonly os: string;
  readonly agentVersion: string;
  readonly region: string;
  readonly startedAt: string;
  /**
   * The agent's `…UnsupportedError` texts from Auth: `''` supported, other text the agent's
   * reason, null an agent too old to say (unsupported).
   */
  readonly stopUnsupported: string | null;
  readonly restartUnsupported: string | null;
  readonly updateUnsupported: string | null;
}

/** One bind or labeled tunnel of a session. */
export interface Tunnel {
  readonly id: string;
  readonly accountId: string;
  readonly sessionId: string;
  readonly instanceId: string;
  /** Empty for a labeled tunnel. */
  readonly proto: BindProto | '';
  readonly publicUrl: string | null;
  readonly labels: Readonly<Record<string, string>> | null;
  readonly forwardsTo: string;
  readonly metadata: string;
  readonly startedAt: string;
  readonly endpointId: string | null;
}

/** One public URL being served; pooled tunnels share it. */
export interface Endpoint {
  readonly id: string;
  readonly accountId: string;
  readonly instanceId: string;
  readonly url: string;
  readonly proto: BindProto;
  readonly host: string;
  readonly port: number;
  readonly sessionId: string;
  readonly principalId: string;
  readonly trafficPolicy: string;
  readonly poolingEnabled: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type SessionCommand = 'stop' | 'restart' | 'update';

/** The data plane's bookkeeping across instances (TUNNELS.md §7). */
export interface DataPlaneRepository {
  /** Records that the instance is alive (insert or update), with its CLUSTER_ADDR (null without). */
  beat(instanceId: string, startedAt: string, nowMs: number, clusterAddr?: string | null): Promise<void>;
  /** Removes every row of instances not seen since `staleBeforeMs`; returns how many instances. */
  sweep(staleBeforeMs: number): Promise<number>;
  /** Removes the instance and every row it owns (a clean stop). */
  /** Removes an instance's rows; resolves with how many sessions it still had. */
  removeInstance(instanceId: string): Promise<number>;
  /** Releases an instance's claims and removes its tunnels and endpoints, its sessions kept (a draining instance). */
  withdrawRoutes(instanceId: string): Promise<void>;
  /** The ACLs of those credentials that still exist under a live account. */
  liveCredentials(ids: readonly string[]): Promise<Map<string, readonly string[]>>;
  enqueueCommand(instanceId: string, sessionId: string, command: SessionCommand, nowMs: number): Promise<void>;
  /** Removes and returns the commands queued for the instance, oldest first. */
  takeCommands(instanceId: string): Promise<{ sessionId: string; command: SessionCommand }[]>;
  /**
   * Calls `onChange` at once when a command is queued (`commands`) or a credential or account
   * changes (`credentials`) through any instance; resolves with how to stop. Absent where one
   * instance is all there is (SQLite). Notifications can be missed: callers poll too.
   */
  watch?(what: 'commands' | 'credentials', onChange: () => void): Promise<() => Promise<void>>;
}

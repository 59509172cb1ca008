import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { isIdOf } from '../ids.js';
import type { PageOf } from '../paging.js';
import { labelsMatch } from '../tunnel-group-backends/labels.js';
import type { SessionCommand, TunnelSession } from '../tunnels/types.js';
import type { GroupSelectors, ListedEndpoint, ListedTunnel, LiveObjectReader, SessionControl, TunnelView } from './types.js';

/**
 * The REST side of the data plane (TUNNELS.md §2–§3): read-only listings of sessions, tunnels and
 * endpoints, and the three session commands. Another account's objects are not found.
 */
export class LiveObjectService {
  constructor(
    private readonly reader: LiveObjectReader,
    private readonly control: SessionControl,
    private readonly groups: GroupSelectors = { selectors: async () => [] },
  ) {}

  private async withBackends(accountId: string, tunnels: readonly ListedTunnel[]): Promise<TunnelView[]> {
    const labeled = tunnels.some((tunnel) => tunnel.labels !== null);
    const selectors = labeled ? await this.groups.selectors(accountId) : [];
    return tunnels.map((tunnel) => ({
      ...tunnel,
      backendIds: tunnel.labels === null ? [] : selectors.filter((group) => labelsMatch(group.labels, tunnel.labels!)).map((group) => group.id),
    }));
  }

  async getSession(caller: Principal, id: string): Promise<TunnelSession> {
    const session = isIdOf(id, 'ts') ? await this.reader.getSession(caller.accountId, id) : undefined;
    if (!session) throw errors.notFound();
    return session;
  }

  listSessions(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<TunnelSession>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'ts')) throw errors.invalidBeforeId(beforeId, 'tunnel session');
    return this.reader.listSessions(caller.accountId, { beforeId, limit });
  }

  async getTunnel(caller: Principal, id: string): Promise<TunnelView> {
    const tunnel = isIdOf(id, 'tn') ? await this.reader.getTunnel(caller.accountId, id) : undefined;
    if (!tunnel) throw errors.notFound();
    const [view] = await this.withBackends(caller.accountId, [tunnel]);
    return view!;
  }

  async listTunnels(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<TunnelView>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'tn')) throw errors.invalidBeforeId(beforeId, 'tunnel');
    const page = await this.reader.listTunnels(caller.accountId, { beforeId, limit });
    return { items: await this.withBackends(caller.accountId, page.items), hasMore: page.hasMore };
  }

  async getEndpoint(caller: Principal, id: string): Promise<ListedEndpoint> {
    const endpoint = isIdOf(id, 'ep') ? await this.reader.getEndpoint(caller.accountId, id) : undefined;
    if (!endpoint) throw errors.notFound();
    return endpoint;
  }

  listEndpoints(caller: Principal, beforeId: string | undefined, limit: number): Promise<PageOf<ListedEndpoint>> {
    if (beforeId !== undefined && !isIdOf(beforeId, 'ep')) throw errors.invalidBeforeId(beforeId, 'endpoint');
    return this.reader.listEndpoints(caller.accountId, { beforeId, limit });
  }

  /**
   * Stop / restart / update (204), or 400 ERR_NGROK_805 / 804 / 806 when the agent said in its
   * Auth that it cannot (or is too old to say), leaving the session untouched.
   */
  async command(caller: Principal, id: string, command: SessionCommand): Promise<void> {
    const session = await this.getSession(caller, id);
    const unsupported =
      command === 'stop' ? session.stopUnsupported : command === 'restart' ? session.restartUnsupported : session.updateUnsupported;
    if (unsupported !== '') throw errors.agentCommandUnsupported(command, unsupported ?? 'the agent is too old to support it');
    await this.control.send(session, command);
  }
}

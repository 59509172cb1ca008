import type { Principal } from '../accounts/types.js';
import { errors } from '../errors.js';
import { isIdOf } from '../ids.js';
import type { PageOf } from '../paging.js';
import { BODY_LIMIT_MAX_BYTES, DEFAULT_INSPECTION_SETTINGS, type InspectedRequest, type InspectionRepository, type InspectionSettings } from './types.js';

/** Whether the endpoint is a live one of the caller's account. */
export type EndpointCheck = (caller: Principal, endpointId: string) => Promise<boolean>;

/**
 * The inspection settings and the captured requests (CONSOLE.md §2). An endpoint's requests stay
 * listed after its agent has gone; another account's endpoint is 404, like an unknown one.
 */
export class InspectionService {
  constructor(
    private readonly repository: InspectionRepository,
    private readonly isLiveEndpoint: EndpointCheck,
  ) {}

  async settings(caller: Principal): Promise<InspectionSettings> {
    return (await this.repository.getSettings(caller.accountId)) ?? DEFAULT_INSPECTION_SETTINGS;
  }

  /** Absent fields keep their value; the schema has checked each given one. */
  async updateSettings(caller: Principal, changes: Partial<InspectionSettings>): Promise<InspectionSettings> {
    if (changes.bodyLimitBytes !== undefined && !(changes.bodyLimitBytes >= 0 && changes.bodyLimitBytes <= BODY_LIMIT_MAX_BYTES)) {
      throw errors.invalidField('body_limit_bytes', `must be a whole number of bytes from 0 to ${BODY_LIMIT_MAX_BYTES}`);
    }
    const current = await this.settings(caller);
    const next: InspectionSettings = {
      capture: changes.capture ?? current.capture,
      bodyLimitBytes: changes.bodyLimitBytes ?? current.bodyLimitBytes,
      redactSecrets: changes.redactSecrets ?? current.redactSecrets,
    };
    await this.repository.putSettings(caller.accountId, next);
    return next;
  }

  async list(caller: Principal, endpointId: string, beforeId: string | undefined, limit: number): Promise<PageOf<InspectedRequest>> {
    await this.knownEndpoint(caller, endpointId);
    if (beforeId !== undefined && !isIdOf(beforeId, 'req')) throw errors.invalidBeforeId(beforeId, 'request');
    return this.repository.listPage(caller.accountId, endpointId, { beforeId, limit });
  }

  async get(caller: Principal, endpointId: string, id: string): Promise<InspectedRequest> {
    const found = isIdOf(endpointId, 'ep') && isIdOf(id, 'req') ? await this.repository.get(caller.accountId, endpointId, id) : undefined;
    if (!found) throw errors.notFound();
    return found;
  }

  private async knownEndpoint(caller: Principal, endpointId: string): Promise<void> {
    const known = isIdOf(endpointId, 'ep') && ((await this.isLiveEndpoint(caller, endpointId)) || (await this.repository.hasAny(caller.accountId, endpointId)));
    if (!known) throw errors.notFound();
  }
}

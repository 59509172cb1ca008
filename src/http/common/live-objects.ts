import type { LiveObjectService } from '../../domain/live-objects/service.js';

/** What the routes of the live objects (tunnel sessions, tunnels, endpoints) are given. */
export interface LiveObjectRouteDeps {
  live: LiveObjectService;
  publicUrl: string | undefined;
}

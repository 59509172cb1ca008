import Type from 'typebox';
import { formatTimestamp } from '../../domain/ids.js';

/** `{id, uri}`: how one object of the API names another. */
export const Ref = Type.Object({
  id: Type.String(),
  uri: Type.String({ description: 'Absolute URL of the object; empty where burrow serves no such resource.' }),
});

export function ref(id: string, uri: string): { id: string; uri: string } {
  return { id, uri };
}

/** Where an object of each resource lives: its own `uri`, and the `uri` of a reference to it. */
export const uris = {
  credential: (base: string, id: string) => `${base}/credentials/${id}`,
  tlsEdge: (base: string, id: string) => `${base}/edges/tls/${id}`,
  tunnelGroupBackend: (base: string, id: string) => `${base}/backends/tunnel_group/${id}`,
  tunnelSession: (base: string, id: string) => `${base}/tunnel_sessions/${id}`,
  tunnel: (base: string, id: string) => `${base}/tunnels/${id}`,
  endpoint: (base: string, id: string) => `${base}/endpoints/${id}`,
  reservedDomain: (base: string, id: string) => `${base}/reserved_domains/${id}`,
  reservedAddr: (base: string, id: string) => `${base}/reserved_addrs/${id}`,
};

/**
 * SPEC §1 timestamps (UTC, whole seconds) from a stored ISO 8601 time: the data plane records
 * its times with milliseconds.
 */
export function wireTime(stored: string): string {
  const ms = Date.parse(stored);
  return Number.isNaN(ms) ? stored : formatTimestamp(Math.floor(ms / 1000));
}

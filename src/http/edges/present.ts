import type { BackendModule, TlsEdge, TlsTerminationModule, TrafficPolicyModule } from '../../domain/edges/types.js';
import { ref, uris } from '../common/refs.js';
import { presentDescribed } from '../common/present.js';

/** The wire shape of SPEC §7.1: modules burrow does not serve are always null. */
export function presentEdge(edge: TlsEdge, base: string) {
  return {
    ...presentDescribed(edge, uris.tlsEdge(base, edge.id)),
    hostports: [...edge.hostports],
    backend: edge.backend && presentBackend(edge.backend, base),
    ip_restriction: null,
    mutual_tls: null,
    tls_termination: edge.tlsTermination && presentTermination(edge.tlsTermination),
    traffic_policy: edge.trafficPolicy && presentModule(edge.trafficPolicy),
    policy: null,
  };
}

export function presentModule(module: TrafficPolicyModule) {
  return { enabled: module.enabled, value: module.value };
}

export function presentBackend(module: BackendModule, base: string) {
  return { enabled: module.enabled, backend: ref(module.backendId, uris.tunnelGroupBackend(base, module.backendId)) };
}

export function presentTermination(module: TlsTerminationModule) {
  return { enabled: module.enabled, terminate_at: module.terminateAt, min_version: module.minVersion ?? undefined };
}

import { aclIsUnrestricted, aclPermitsBind, bindHostnameProblem } from '../acl.js';
import { randomBase36 } from './names.js';
import { agentErrors, AgentRefusal } from './agent-errors.js';
import type { RebindTarget } from './tokens.js';

/** How the public side is reached: what a bind may ask for and how its URL is written. */
export interface EdgeSettings {
  /** Base of generated names and of `Subdomain` binds, lower-case. */
  readonly edgeDomain: string;
  /** The host of every `tcp://` URL, and the only host a TCP `Addr` may name. */
  readonly publicHost: string;
  readonly tcpPorts: readonly PortRange[];
  readonly region: string;
  /** Ports written in URLs; undefined when that listener is off. */
  readonly httpPort: number | undefined;
  readonly tlsPort: number | undefined;
}

export interface PortRange {
  readonly first: number;
  readonly last: number;
}

export type HostnameProto = 'http' | 'https' | 'tls';
export type BindProto = HostnameProto | 'tcp';

/** What an agent's Bind asks for, read from its `Proto` and `Opts`. */
export interface BindAsk {
  readonly proto: BindProto;
  readonly hostname?: string | undefined;
  readonly domain?: string | undefined;
  readonly subdomain?: string | undefined;
  readonly addr?: string | undefined;
}

/**
 * A rebind that names no hostname or address asks for the one its Token remembers (TUNNELS.md §2:
 * the URL is kept when still permitted and free); undefined when it names one or the kinds differ.
 */
export function rememberedAsk(ask: BindAsk, remembered: RebindTarget, publicHost: string): BindAsk | undefined {
  if (ask.hostname || ask.domain || ask.subdomain || ask.addr) return undefined;
  if (remembered.kind === 'tcp') return ask.proto === 'tcp' ? { proto: 'tcp', addr: `${publicHost}:${remembered.port}` } : undefined;
  return ask.proto === 'tcp' ? undefined : { proto: ask.proto, hostname: remembered.hostname };
}

export interface BindingCredential {
  readonly id: string;
  readonly accountId: string;
  readonly acl: readonly string[];
}

/** A bind's public target, once it is known to be well-formed and permitted. */
export type BindTarget =
  | { readonly kind: 'hostname'; readonly proto: HostnameProto; readonly hostname: string }
  /** `port` undefined: any free port of EDGE_TCP_PORTS. */
  | { readonly kind: 'tcp'; readonly port: number | undefined };

/** A target once claimed: a random TCP bind has its port. */
export type BoundTarget = { readonly kind: 'hostname'; readonly proto: HostnameProto; readonly hostname: string } | { readonly kind: 'tcp'; readonly port: number };

const GENERATED_NAME_LENGTH = 12;

/**
 * Decides a bind's target and checks it against the credential's ACL (TUNNELS.md §3), with the
 * same ACL code that validates rules. Throws the AgentRefusal the agent must see.
 */
export function resolveBindTarget(ask: BindAsk, credential: BindingCredential, edge: EdgeSettings): BindTarget {
  const off = listenerOff(ask.proto, edge);
  if (off) throw agentErrors.protoNotServed(ask.proto, off);
  if (ask.proto === 'tcp') return resolveTcp(ask, credential, edge);
  const hostname = requestedHostname(ask, edge);
  if (!aclPermitsBind(credential.acl, { domain: hostname })) throw agentErrors.nameNotPermitted(credential.id, hostname);
  return { kind: 'hostname', proto: ask.proto, hostname };
}

/** The setting that turned off the public listener of `proto`'s endpoints, if it is off. */
function listenerOff(proto: BindProto, edge: EdgeSettings): string | undefined {
  if (proto === 'http') return edge.httpPort === undefined ? 'EDGE_HTTP_PORT=0' : undefined;
  if (proto === 'tcp') return edge.tcpPorts.length === 0 ? 'EDGE_TCP_PORTS is empty' : undefined;
  return edge.tlsPort === undefined ? 'EDGE_TLS_PORT=0' : undefined;
}

function requestedHostname(ask: BindAsk, edge: EdgeSettings): string {
  const named = nonEmpty(ask.hostname) ?? nonEmpty(ask.domain);
  const subdomain = nonEmpty(ask.subdomain);
  const hostname =
    named ?? (subdomain !== undefined ? `${subdomain}.${edge.edgeDomain}` : `${randomBase36(GENERATED_NAME_LENGTH)}.${edge.edgeDomain}`);
  const problem = bindHostnameProblem(hostname, { wildcard: true });
  if (problem) throw agentErrors.invalidDomain(hostname, problem);
  return hostname.toLowerCase();
}

function resolveTcp(ask: BindAsk, credential: BindingCredential, edge: EdgeSettings): BindTarget {
  const addr = nonEmpty(ask.addr);
  if (addr === undefined) {
    if (!aclIsUnrestricted(credential.acl)) throw agentErrors.randomAddressNotPermitted(credential.id);
    return { kind: 'tcp', port: undefined };
  }
  const colon = addr.lastIndexOf(':');
  const host = colon === -1 ? addr : addr.slice(0, colon);
  const portText = colon === -1 ? '' : addr.slice(colon + 1);
  const port = /^[1-9][0-9]{0,4}$/.test(portText) ? Number(portText) : NaN;
  // The address must be one burrow serves before the ACL is asked about it (decision: 307 first).
  if (host.toLowerCase() !== edge.publicHost || !inRanges(port, edge.tcpPorts)) {
    throw agentErrors.addressNotReserved(addr.slice(0, 300), credential.accountId, edge.region);
  }
  const address = `${edge.publicHost}:${port}`;
  if (!aclPermitsBind(credential.acl, { address })) throw agentErrors.addressNotPermitted(credential.id, address);
  return { kind: 'tcp', port };
}

/** Every label of a labeled tunnel must be permitted (ERR_NGROK_399 names the first that is not). */
export function checkLabels(labels: Readonly<Record<string, string>>, credential: BindingCredential): void {
  const entries = Object.entries(labels);
  if (entries.length === 0) throw agentErrors.badBindPayload('A labeled tunnel needs at least one label.');
  for (const [key, value] of entries) {
    if (typeof value !== 'string' || !aclPermitsBind(credential.acl, { labels: { [key]: value } })) {
      throw agentErrors.labelNotPermitted(credential.id, `${key}=${String(value)}`);
    }
  }
}

export function inRanges(port: number, ranges: readonly PortRange[]): boolean {
  return Number.isInteger(port) && ranges.some((range) => port >= range.first && port <= range.last);
}

/** The public URL of a bound target: the scheme's default port is left out (TUNNELS.md §1). */
export function publicUrl(proto: BindProto, host: string, port: number | undefined): string {
  const scheme = proto;
  const defaultPort = proto === 'http' ? 80 : proto === 'tcp' ? undefined : 443;
  return port === undefined || port === defaultPort ? `${scheme}://${host}` : `${scheme}://${host}:${port}`;
}

/** The claim that keeps a name or port to one account, across instances. */
export function claimKey(target: { kind: 'hostname'; hostname: string } | { kind: 'tcp'; port: number }): string {
  return target.kind === 'hostname' ? `host:${target.hostname}` : `tcp:${target.port}`;
}

function nonEmpty(value: string | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A live tunnel as the ACL sees it: a hostname, a TCP port, or labels. */
export type HeldTarget =
  | { readonly kind: 'hostname'; readonly hostname: string }
  | { readonly kind: 'tcp'; readonly port: number }
  | { readonly kind: 'labels'; readonly labels: Readonly<Record<string, string>> };

/**
 * Whether a credential's (new) ACL still permits a live tunnel (TUNNELS.md §2, revocation);
 * returns the refusal to send when it does not.
 */
export function aclRefusalFor(target: HeldTarget, credential: BindingCredential, edge: EdgeSettings): AgentRefusal | null {
  if (target.kind === 'hostname') {
    return aclPermitsBind(credential.acl, { domain: target.hostname }) ? null : agentErrors.nameNotPermitted(credential.id, target.hostname);
  }
  if (target.kind === 'tcp') {
    const address = `${edge.publicHost}:${target.port}`;
    return aclPermitsBind(credential.acl, { address }) ? null : agentErrors.addressNotPermitted(credential.id, address);
  }
  try {
    checkLabels(target.labels, credential);
    return null;
  } catch (error) {
    if (error instanceof AgentRefusal) return error;
    throw error;
  }
}

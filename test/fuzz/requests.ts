/**
 * Turning symbolic cases into requests, and SPEC §2's verdicts on them: what the first failing
 * step of the pipeline must answer. Used by the properties that predict exact answers.
 */
import { editKey, type AuthSpec, type IdSpec, type VersionSpec } from './arbitraries.js';
import type { CallerName, Fixture, HeaderValue, World } from './world.js';

export type Verdict<T> = { ok: T } | { status: number; code?: string | undefined };

export function isOk<T>(verdict: Verdict<T>): verdict is { ok: T } {
  return 'ok' in verdict;
}

/** The Authorization header of a spec, built from the world's current keys and tokens. */
export function authHeader(spec: AuthSpec, world: World): string | undefined {
  switch (spec.kind) {
    case 'valid':
      return `${spec.scheme}${' '.repeat(spec.spaces)}${world.callers[spec.caller].key}`;
    case 'missing':
      return undefined;
    case 'notBearer':
    case 'malformed':
      return spec.kind === 'malformed' ? `Bearer ${spec.value}` : spec.value;
    case 'unknownKey':
      return `Bearer ${spec.value}`;
    case 'nearKey':
      return `Bearer ${editKey(world.callers[spec.caller].key, spec.edit)}`;
    case 'revoked':
      return `Bearer ${world.revokedKey}`;
    case 'deletedToken':
      return `Bearer ${world.deletedToken}`;
    case 'tunnelToken':
      return `Bearer ${world.fixtures[spec.fixture].token ?? ''}`;
  }
}

/** SPEC §2 step 2 for a header value: the caller, or the 401 and its code. */
export function authVerdict(header: string | undefined, world: World): Verdict<CallerName> {
  if (header === undefined) return { status: 401, code: 'ERR_NGROK_200' };
  const match = /^bearer +(\S+) *$/i.exec(header);
  if (!match) return { status: 401, code: 'ERR_NGROK_201' };
  const secret = match[1]!;
  if (!/^[0-9A-Za-z]{27}_[0-9A-Za-z]{20,22}$/.test(secret)) return { status: 401, code: 'ERR_NGROK_202' };
  for (const [name, caller] of Object.entries(world.callers)) if (caller.key === secret) return { ok: name as CallerName };
  for (const fixture of Object.values(world.fixtures)) if (fixture.token === secret) return { status: 401, code: 'ERR_NGROK_207' };
  return { status: 401, code: 'ERR_NGROK_203' };
}

/** The version headers of a spec. */
export function versionHeaders(spec: VersionSpec): Record<string, HeaderValue> {
  const headers: Record<string, HeaderValue> = {};
  if (spec.service !== undefined) headers[spec.serviceName] = spec.service;
  if (spec.ngrok !== undefined) headers[spec.ngrokName] = spec.ngrok;
  return headers;
}

/** SPEC §2 step 4. A repeated header reaches the server as one comma-joined value. */
export function versionVerdict(spec: VersionSpec): Verdict<true> {
  const values = [spec.service, spec.ngrok].filter((value) => value !== undefined).map((value) => [value].flat().join(', '));
  if (values.length === 0) return { status: 400, code: 'ERR_NGROK_218' };
  return values.every((value) => value === '2') ? { ok: true } : { status: 400, code: 'ERR_NGROK_217' };
}

/** The id text of an IdSpec, and the fixture it names (if any). */
export function resolveId(spec: IdSpec, world: World): { text: string; fixture?: Fixture } {
  if ('fixture' in spec) return { text: world.fixtures[spec.fixture].id, fixture: spec.fixture };
  return { text: world.expand(spec.text) };
}

/** Whether `caller` can see the resource an id names on a route for `kind`. */
export function visible(world: World, caller: CallerName, fixture: Fixture | undefined, kind: 'credential' | 'edge'): boolean {
  if (fixture === undefined) return false;
  const isCredential = fixture.startsWith('cred');
  if (isCredential !== (kind === 'credential')) return false;
  return world.fixtureAccount(fixture) === world.accountOf(caller);
}

export function describeVerdict(verdict: Verdict<unknown>): string {
  return isOk(verdict) ? 'success' : `${verdict.status}${verdict.code ? ` ${verdict.code}` : ''}`;
}

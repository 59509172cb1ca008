/**
 * The HTTP actions compiled for evaluation, once per policy version: templates split into text
 * and compiled expressions, `from` patterns compiled with RE2, passwords kept as bytes for a
 * constant-time comparison.
 */
import type { RE2JS } from 're2js';
import { compileRe2 } from './regex.js';
import type { BreakerConfig } from './circuit-breakers.js';
import type { CompressionAlgorithm, HttpAction, PolicyValue } from './types.js';
import type { LoginConfig } from '../identity/login-config.js';
import type { JwtValidationConfig } from '../identity/jwt-config.js';

/** A config string: fixed, or literal text around compiled `${...}` expressions (the shape program.ts builds). */
export type StringTemplate = { kind: 'static'; value: PolicyValue } | { kind: 'string'; literals: string[]; expressions: Array<{ text: string; run: (a: Record<string, unknown>) => unknown }> } | { kind: 'list' | 'map' };

export type HttpProgramAction =
  | { type: 'deny'; status: number }
  | { type: 'add-headers'; headers: Array<[string, StringTemplate]> }
  | { type: 'remove-headers'; headers: readonly string[] }
  | { type: 'custom-response'; status: number; body: StringTemplate; headers: Array<[string, StringTemplate]> }
  | { type: 'redirect'; from: RE2JS | null; to: StringTemplate; status: number; headers: Array<[string, StringTemplate]> }
  | { type: 'url-rewrite'; from: RE2JS | null; to: StringTemplate }
  | { type: 'set-vars'; vars: Array<[string, StringTemplate]> }
  | { type: 'compress-response'; algorithms: readonly CompressionAlgorithm[] }
  | { type: 'circuit-breaker'; breaker: BreakerConfig }
  | { type: 'basic-auth'; credentials: ReadonlyArray<{ username: string; secret: Buffer }>; realm: string; enforce: boolean }
  | { type: 'verify-webhook'; provider: string; secret: StringTemplate; enforce: boolean }
  | { type: 'jwt-validation'; config: JwtValidationConfig }
  | { type: 'rate-limit'; bucket: string; capacity: number; windowMs: number; keys: StringTemplate[] }
  | { type: 'openid-connect' | 'oauth'; login: LoginConfig };

let breakerSequence = 0;

/**
 * `templateOf` compiles a config value (program.ts's `template`); `id` names the action within the
 * policy (`rule 2 action 1`), which identifies a rate-limit bucket when the action has no name.
 */
export function compileHttpAction(action: HttpAction, templateOf: (value: PolicyValue) => StringTemplate, id: string): HttpProgramAction {
  const headers = (list: Array<[string, string]>): Array<[string, StringTemplate]> => list.map(([name, value]) => [name, templateOf(value)]);
  switch (action.type) {
    case 'deny':
      return { type: 'deny', status: action.config?.status_code ?? 403 };
    case 'add-headers':
      return { type: 'add-headers', headers: headers(action.config.headers) };
    case 'remove-headers':
      return { type: 'remove-headers', headers: action.config.headers };
    case 'custom-response':
      return { type: 'custom-response', status: action.config.status_code, body: templateOf(action.config.body), headers: headers(action.config.headers) };
    case 'redirect':
      return { type: 'redirect', from: pattern(action.config.from), to: templateOf(action.config.to), status: action.config.status_code, headers: headers(action.config.headers) };
    case 'url-rewrite':
      return { type: 'url-rewrite', from: pattern(action.config.from), to: templateOf(action.config.to) };
    case 'set-vars':
      return { type: 'set-vars', vars: action.config.vars.map(([name, value]) => [name, templateOf(value)]) };
    case 'circuit-breaker': {
      const c = action.config;
      // A breaker of its own per compiled action: the options' program and the policy's share an endpoint.
      const breaker = { key: `${id} #${++breakerSequence}`, threshold: c.error_threshold, volume: c.volume_threshold, windowMs: c.window_duration * 1000, trippedMs: c.tripped_duration * 1000, buckets: c.num_buckets };
      return { type: 'circuit-breaker', breaker };
    }
    case 'compress-response':
      return { type: 'compress-response', algorithms: action.config.algorithms };
    case 'basic-auth':
      return {
        type: 'basic-auth',
        credentials: action.config.credentials.map((c) => ({ username: c.username, secret: Buffer.from(`${c.username}:${c.password}`, 'utf8') })),
        realm: action.config.realm,
        enforce: action.config.enforce,
      };
    case 'verify-webhook':
      return { type: 'verify-webhook', provider: action.config.provider, secret: templateOf(action.config.secret), enforce: action.config.enforce };
    case 'openid-connect':
    case 'oauth':
      return { type: action.type, login: action.config };
    case 'jwt-validation':
      return { type: 'jwt-validation', config: action.config };
    case 'rate-limit':
      return {
        type: 'rate-limit',
        // Named limits share their counts across policy versions (HTTP-POLICY.md §2).
        bucket: action.config.name !== '' ? `name:${action.config.name}` : id,
        capacity: action.config.capacity,
        windowMs: action.config.rateSeconds * 1000,
        keys: action.config.bucket_key.map((key) => templateOf(key)),
      };
  }
}

function pattern(from: string | null): RE2JS | null {
  if (from === null) return null;
  const compiled = compileRe2(from);
  if (!compiled.ok) throw new Error(`The policy was not validated: ${JSON.stringify(from)} is not RE2.`);
  return compiled.re;
}

/**
 * An `openid-connect` or `oauth` action as validated (IDENTITY.md §1–§2): what the login flow,
 * the session cookie and the evaluator need. Secrets stay in memory, never in messages or logs.
 */
import { createHash } from 'node:crypto';

export type LoginKind = 'openid-connect' | 'oauth';

export interface LoginConfig {
  readonly kind: LoginKind;
  /**
   * Names the session (its cookie) and the login in /ngrok/login?auth_id=…: the action's
   * auth_id, else derived from the provider and client, so a policy's new version keeps sessions.
   */
  readonly key: string;
  /** openid-connect: the issuer; oauth: the provider's name. */
  readonly provider: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scopes: readonly string[];
  readonly authzUrlParams: ReadonlyArray<readonly [string, string]>;
  readonly idleSeconds: number;
  readonly maxSeconds: number;
  readonly allowCorsPreflight: boolean;
  /** userinfo_refresh_interval: the identity is read again (with the kept access token) once this old; absent: never. */
  readonly refreshSeconds?: number | undefined;
  /** auth_cookie_domain, lower-case, without a leading dot: the session cookie's Domain (the endpoint's host or a parent). */
  readonly cookieDomain?: string | undefined;
}

/** Whether `host` may carry a session cookie of `domain`: the domain itself or a name under it. */
export function withinCookieDomain(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

/** Reference defaults are unpublished; burrow's are in docs/DECISIONS.md. */
export const DEFAULT_IDLE_SECONDS = 24 * 3600;
export const DEFAULT_MAX_SECONDS = 7 * 24 * 3600;
export const OIDC_DEFAULT_SCOPES: readonly string[] = ['openid', 'profile', 'email'];

export function derivedLoginKey(kind: LoginKind, provider: string, clientId: string): string {
  const digest = createHash('sha256').update(`${kind}\n${provider}\n${clientId}`).digest('hex').slice(0, 16);
  return `${kind === 'oauth' ? 'oauth' : 'oidc'}-${digest}`;
}

/** Provider name for pages and log lines: the issuer's host, or the OAuth provider. */
export function providerLabel(login: LoginConfig): string {
  if (login.kind === 'oauth') return login.provider;
  try {
    return new URL(login.provider).host;
  } catch {
    return login.provider;
  }
}

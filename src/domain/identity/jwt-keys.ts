/**
 * The JSON Web Key Sets of jwt-validation's `additional_jkus` (IDENTITY.md §3), shared by every
 * endpoint of the process and keyed by URL. A set is fetched within a time and size bound, kept
 * for its Cache-Control max-age (bounded both ways), refetched at once for an unknown `kid` but
 * at most once per URL per 30 s, and kept past its age when a refresh fails.
 */
import type { JSONWebKeySet } from 'jose';

export const JWKS_LIMITS = {
  /** The whole fetch, connection to last byte. */
  timeoutMs: 4000,
  maxBytes: 256 * 1024,
  maxKeys: 100,
  /** Without Cache-Control: the reference refreshes "roughly every 15 minutes". */
  defaultTtlMs: 15 * 60_000,
  minTtlMs: 30_000,
  maxTtlMs: 60 * 60_000,
  /** Refetches for an unknown `kid`, per URL. */
  kidRefetchMs: 30_000,
  /** After a failed fetch with nothing cached, requests fail at once for this long instead of each waiting on the provider. */
  failureBackoffMs: 5_000,
  /** URLs remembered; the least recently fetched is forgotten first. */
  maxEntries: 1000,
} as const;

export type KeySetResult = { ok: true; keys: JSONWebKeySet } | { ok: false; reason: string };

interface Entry {
  keys?: JSONWebKeySet;
  expiresAt: number;
  /** When an unknown `kid` last caused a fetch. */
  kidRefetchAt?: number;
  failedAt?: number;
  failure?: string;
  inflight?: Promise<void>;
}

export type JwksFetch = (url: string, init: { signal: AbortSignal; redirect: 'error'; headers: Record<string, string> }) => Promise<Response>;

export class JwksCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly fetcher: JwksFetch = (url, init) => fetch(url, init),
    private readonly now: () => number = Date.now,
  ) {}

  /** The set served at `url`, fetched when it has none fresh. */
  async get(url: string): Promise<KeySetResult> {
    const entry = this.entry(url);
    const now = this.now();
    if (!entry.keys || now >= entry.expiresAt) {
      const backingOff = entry.failedAt !== undefined && now - entry.failedAt < JWKS_LIMITS.failureBackoffMs;
      if (!backingOff) await this.refresh(url, entry);
    }
    return entry.keys ? { ok: true, keys: entry.keys } : { ok: false, reason: entry.failure ?? 'the key set could not be fetched' };
  }

  /** A token named a `kid` the set lacks: refetch, unless one such refetch happened in the last 30 s. True when it fetched. */
  async refreshForUnknownKid(url: string): Promise<boolean> {
    const entry = this.entry(url);
    const now = this.now();
    // A fetch under way (another request's new kid) may bring this one too: wait for it.
    if (entry.inflight) return entry.inflight.then(() => true);
    if (entry.kidRefetchAt !== undefined && now - entry.kidRefetchAt < JWKS_LIMITS.kidRefetchMs) return false;
    entry.kidRefetchAt = now;
    await this.refresh(url, entry);
    return true;
  }

  private entry(url: string): Entry {
    let entry = this.entries.get(url);
    if (!entry) {
      if (this.entries.size >= JWKS_LIMITS.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(url, (entry = { expiresAt: 0 }));
    }
    return entry;
  }

  /** One fetch per URL at a time: concurrent requests wait on the same one. */
  private refresh(url: string, entry: Entry): Promise<void> {
    entry.inflight ??= this.fetchInto(url, entry).finally(() => {
      entry.inflight = undefined;
    });
    return entry.inflight;
  }

  private async fetchInto(url: string, entry: Entry): Promise<void> {
    try {
      const { keys, ttlMs } = await fetchKeySet(this.fetcher, url);
      Object.assign(entry, { keys, expiresAt: this.now() + ttlMs, failedAt: undefined, failure: undefined });
      // Re-inserted: the map's order is the order of last fetch, for eviction.
      this.entries.delete(url);
      this.entries.set(url, entry);
    } catch (error) {
      entry.failedAt = this.now();
      entry.failure = error instanceof Error ? error.message : String(error);
      // A stale set stays in use; it is tried again after the backoff, not on every request.
      if (entry.keys) entry.expiresAt = entry.failedAt + JWKS_LIMITS.failureBackoffMs;
    }
  }
}

async function fetchKeySet(fetcher: JwksFetch, url: string): Promise<{ keys: JSONWebKeySet; ttlMs: number }> {
  const signal = AbortSignal.timeout(JWKS_LIMITS.timeoutMs);
  let response: Response;
  try {
    response = await fetcher(url, { signal, redirect: 'error', headers: { accept: 'application/json, application/jwk-set+json' } });
  } catch (error) {
    throw new Error(signal.aborted ? `no answer within ${JWKS_LIMITS.timeoutMs / 1000} s` : `unreachable (${causeOf(error)})`);
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => {});
    throw new Error(`answered ${response.status}`);
  }
  const text = await boundedText(response, signal);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('did not serve JSON');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.some((key) => typeof key !== 'object' || key === null || Array.isArray(key))) throw new Error('did not serve a JWKS (an object with a "keys" list)');
  if (keys.length > JWKS_LIMITS.maxKeys) throw new Error(`served ${keys.length} keys; at most ${JWKS_LIMITS.maxKeys} are read`);
  return { keys: { keys } as JSONWebKeySet, ttlMs: cacheTtl(response.headers.get('cache-control')) };
}

/** The body as text, refused once it passes the size bound (read no further). */
async function boundedText(response: Response, signal: AbortSignal): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > JWKS_LIMITS.maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new Error(`served more than ${JWKS_LIMITS.maxBytes} bytes`);
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > JWKS_LIMITS.maxBytes) {
        await reader.cancel().catch(() => {});
        throw new Error(`served more than ${JWKS_LIMITS.maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (signal.aborted) throw new Error(`no answer within ${JWKS_LIMITS.timeoutMs / 1000} s`);
    throw error;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** max-age (or no-store / no-cache: the shortest), bounded to [30 s, 1 h]; none: 15 min. */
export function cacheTtl(header: string | null): number {
  if (!header) return JWKS_LIMITS.defaultTtlMs;
  if (/(^|,)\s*(no-store|no-cache)\s*(,|$)/i.test(header)) return JWKS_LIMITS.minTtlMs;
  const match = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(header);
  if (!match) return JWKS_LIMITS.defaultTtlMs;
  return Math.min(JWKS_LIMITS.maxTtlMs, Math.max(JWKS_LIMITS.minTtlMs, Number(match[1]) * 1000));
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

import { formatTimestamp, newId } from '../ids.js';
import { REPLAY_CLAIM_MS, ReplayTokens } from './replay-tokens.js';
import { DEFAULT_INSPECTION_SETTINGS, type CapturedBody, type InspectedRequest, type InspectionRepository, type InspectionSettings } from './types.js';

/** What the HTTP proxy hands over for one finished exchange. */
export interface Exchange {
  /** Given for a replay (the API answers with it before the request is made); otherwise made here. */
  readonly id?: string | undefined;
  readonly accountId: string;
  readonly endpointId: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly durationMs: number;
  readonly clientIp: string;
  /** Raw header pairs as received and sent, in order. */
  readonly requestHeaders: readonly (readonly [string, string])[];
  readonly responseHeaders: readonly (readonly [string, string])[];
  readonly actions: readonly string[];
  /** With capture `bodies`: the first bytes seen (the proxy stops copying at the limit) and the full length. */
  readonly requestBody?: { readonly head: Buffer; readonly length: number } | undefined;
  readonly responseBody?: { readonly head: Buffer; readonly length: number } | undefined;
}

/** Headers that carry credentials: their values are never stored while redact_secrets is on. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key', 'x-auth-token', 'x-csrf-token']);
export const REDACTED = '[REDACTED]';

const SETTINGS_TTL_MS = 1000;
const FLUSH_EVERY_MS = 250;
/** Beyond this many waiting requests (a database that cannot keep up), the oldest are dropped. */
const MAX_QUEUED = 10_000;
/** Replays sent and not yet seen by the proxy: a bound, and how long one waits to be claimed. */
const MAX_PENDING_REPLAYS = 100;

/**
 * Captures requests off the request path: `settingsFor` answers from a cache (refreshed in the
 * background, so the proxy never waits on the database), `record` queues, and the queue is
 * written in batches every 250 ms, each endpoint then trimmed to its newest `keep`.
 */
export class InspectionRecorder {
  private readonly cache = new Map<string, { settings: InspectionSettings; fetchedAt: number; loading: boolean }>();
  private queue: InspectedRequest[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Requests dropped because the queue was full. */
  dropped = 0;
  /** Replays this instance sent and its own proxy has not carried yet (token → expiry). */
  private readonly replays = new Map<string, number>();

  constructor(
    private readonly repository: InspectionRepository,
    private readonly keep: number,
    private readonly onError: (error: unknown) => void = () => {},
    private readonly nowMs: () => number = Date.now,
    /** Verifies replay tokens made by any instance sharing the key (CLUSTER_SECRET). */
    private readonly tokens: ReplayTokens = new ReplayTokens(undefined),
  ) {}

  /** The account's settings as last read (capture off until the first read answers); never waits. */
  settingsFor(accountId: string): InspectionSettings {
    const entry = this.cache.get(accountId);
    const now = this.nowMs();
    if (!entry || (now - entry.fetchedAt > SETTINGS_TTL_MS && !entry.loading)) {
      const next = { settings: entry?.settings ?? DEFAULT_INSPECTION_SETTINGS, fetchedAt: entry?.fetchedAt ?? 0, loading: true };
      this.cache.set(accountId, next);
      this.repository.getSettings(accountId).then(
        (settings) => this.cache.set(accountId, { settings: settings ?? DEFAULT_INSPECTION_SETTINGS, fetchedAt: this.nowMs(), loading: false }),
        (error: unknown) => {
          next.loading = false;
          this.onError(error);
        },
      );
      return next.settings;
    }
    return entry.settings;
  }

  /** Queues one exchange under the settings it was captured with (nothing when capture is off). */
  record(exchange: Exchange, settings: InspectionSettings): void {
    if (settings.capture === 'off') return;
    const bodies = settings.capture === 'bodies';
    const headers = (pairs: Exchange['requestHeaders']) => headerMap(pairs, settings.redactSecrets);
    const id = exchange.id ?? newId('req').id;
    this.queue.push({
      id,
      accountId: exchange.accountId,
      endpointId: exchange.endpointId,
      createdAt: formatTimestamp(Math.floor(this.nowMs() / 1000)),
      method: exchange.method,
      path: exchange.path,
      status: exchange.status,
      durationMs: exchange.durationMs,
      clientIp: exchange.clientIp,
      requestHeaders: headers(exchange.requestHeaders),
      responseHeaders: headers(exchange.responseHeaders),
      actions: [...exchange.actions],
      requestBody: bodies ? captured(exchange.requestBody, settings.bodyLimitBytes) : undefined,
      responseBody: bodies ? captured(exchange.responseBody, settings.bodyLimitBytes) : undefined,
    });
    if (this.queue.length > MAX_QUEUED) {
      this.dropped += this.queue.length - MAX_QUEUED;
      this.queue.splice(0, this.queue.length - MAX_QUEUED);
    }
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_EVERY_MS).unref();
  }

  /**
   * A replay about to be sent to this instance's own public listener: the token it carries (signed,
   * so a visitor cannot pass a request off as one) and the id it will be recorded under, by this
   * instance's proxy or by another's when the connection is forwarded to the agent's instance.
   */
  expectReplay(endpointId: string): { token: string; id: string } {
    const now = this.nowMs();
    for (const [token, expiresAt] of this.replays) if (expiresAt <= now) this.replays.delete(token);
    if (this.replays.size >= MAX_PENDING_REPLAYS) this.replays.delete(this.replays.keys().next().value!);
    const issued = this.tokens.issue(endpointId, now);
    this.replays.set(issued.token, now + REPLAY_CLAIM_MS);
    return issued;
  }

  /** The id a replay's request to the endpoint is recorded under, once; undefined for a bad, expired or used token. */
  claimReplay(token: string, endpointId: string): string | undefined {
    const id = this.tokens.claim(token, endpointId, this.nowMs());
    if (id !== undefined) this.replays.delete(token);
    return id;
  }

  /** Whether the replay's token is still unclaimed here (its request was not carried by this instance's proxy). */
  replayPending(token: string): boolean {
    return this.replays.has(token);
  }

  /** Whether a request is stored (written by any instance): a replay carried by another instance shows up here. */
  async recorded(accountId: string, endpointId: string, id: string): Promise<boolean> {
    return (await this.repository.get(accountId, endpointId, id)) !== undefined;
  }

  /** Writes what is queued (one batch), then trims each endpoint written to. */
  flush(): Promise<void> {
    this.timer = undefined;
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
      if (this.queue.length > 0) this.timer ??= setTimeout(() => void this.flush(), FLUSH_EVERY_MS).unref();
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      await this.repository.insertBatch(batch);
      const endpoints = new Map(batch.map((item) => [`${item.accountId} ${item.endpointId}`, item]));
      for (const item of endpoints.values()) await this.repository.trim(item.accountId, item.endpointId, this.keep);
    } catch (error) {
      // Inspection is best effort: a failed batch is lost, never retried into an unbounded queue.
      this.onError(error);
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
  }
}

function headerMap(pairs: Exchange['requestHeaders'], redact: boolean): Record<string, string[]> {
  const map: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const [rawName, value] of pairs) {
    const name = rawName.toLowerCase();
    (map[name] ??= []).push(redact && SECRET_HEADERS.has(name) ? REDACTED : value);
  }
  return { ...map };
}

function captured(body: Exchange['requestBody'], limit: number): CapturedBody | undefined {
  if (body === undefined) return undefined;
  const head = body.head.subarray(0, limit);
  return { data: head.toString('base64'), length: body.length, truncated: body.length > head.length };
}

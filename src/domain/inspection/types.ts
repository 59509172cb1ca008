import type { Page, PageOf } from '../paging.js';

/** CONSOLE.md §2: what is captured of an account's HTTP(S) endpoints' traffic. */
export const CAPTURE_MODES = ['off', 'heads', 'bodies'] as const;
export type CaptureMode = (typeof CAPTURE_MODES)[number];

export interface InspectionSettings {
  readonly capture: CaptureMode;
  readonly bodyLimitBytes: number;
  readonly redactSecrets: boolean;
}

export const DEFAULT_INSPECTION_SETTINGS: InspectionSettings = Object.freeze({ capture: 'off', bodyLimitBytes: 65_536, redactSecrets: true });
/** A captured body is at most this long, whatever the setting (the database keeps base64 text). */
export const BODY_LIMIT_MAX_BYTES = 1_048_576;

export interface CapturedBody {
  /** base64 of the first bytes, up to the body limit. */
  readonly data: string;
  /** The whole body's length. */
  readonly length: number;
  readonly truncated: boolean;
}

/** One request through an endpoint and its answer, as GET /endpoints/{id}/requests shows it. */
export interface InspectedRequest {
  readonly id: string;
  readonly accountId: string;
  readonly endpointId: string;
  readonly createdAt: string;
  readonly method: string;
  /** With the query. */
  readonly path: string;
  readonly status: number;
  readonly durationMs: number;
  readonly clientIp: string;
  readonly requestHeaders: Readonly<Record<string, string[]>>;
  readonly responseHeaders: Readonly<Record<string, string[]>>;
  /** The policy actions taken, by type, in order. */
  readonly actions: readonly string[];
  readonly requestBody?: CapturedBody | undefined;
  readonly responseBody?: CapturedBody | undefined;
}

export interface InspectionRepository {
  getSettings(accountId: string): Promise<InspectionSettings | undefined>;
  putSettings(accountId: string, settings: InspectionSettings): Promise<void>;
  insertBatch(requests: readonly InspectedRequest[]): Promise<void>;
  /** Drops all but the newest `keep` requests of the endpoint. */
  trim(accountId: string, endpointId: string, keep: number): Promise<void>;
  listPage(accountId: string, endpointId: string, page: Page): Promise<PageOf<InspectedRequest>>;
  get(accountId: string, endpointId: string, id: string): Promise<InspectedRequest | undefined>;
  hasAny(accountId: string, endpointId: string): Promise<boolean>;
}

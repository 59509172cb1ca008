/**
 * verify-webhook's providers (HTTP-POLICY.md §2): each one's signature scheme as the provider
 * documents it. A provider whose scheme is not a documented signature (or shared token) over the
 * request is not here, and is refused by name when the policy is written.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** What a provider's scheme reads from the request. */
export interface WebhookRequest {
  method: string;
  /** The URL the client asked for (scheme, host, target): Twilio and Square sign it. */
  url: string;
  /** Lower-case names, values as sent. */
  headers: ReadonlyMap<string, readonly string[]>;
  body: Buffer;
}

export type WebhookVerdict = { verified: true } | { verified: false; message: string };

/** Timestamped schemes refuse a request signed longer ago (or ahead) than this: a replay. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** The most of a body verify-webhook reads into memory; a longer one is answered 413 (docs/DECISIONS.md). */
export const WEBHOOK_MAX_BODY_BYTES = 10 * 1024 * 1024;

type Scheme = (request: WebhookRequest, secret: string, nowMs: number) => WebhookVerdict;

const ok: WebhookVerdict = { verified: true };
const no = (message: string): WebhookVerdict => ({ verified: false, message });

function header(request: WebhookRequest, name: string): string | undefined {
  return request.headers.get(name)?.[0]?.trim();
}

function hmac(algorithm: 'sha1' | 'sha256', key: string | Buffer, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Constant time for equal lengths; a signature of another length is simply wrong. */
function same(expected: Buffer, presented: Buffer): boolean {
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}

function hexMatches(expected: Buffer, text: string): boolean {
  return /^[0-9a-f]+$/i.test(text) && same(expected, Buffer.from(text, 'hex'));
}

function base64Matches(expected: Buffer, text: string): boolean {
  return same(expected, Buffer.from(text, 'base64'));
}

function fresh(timestamp: string, nowMs: number): boolean {
  if (!/^\d{1,12}$/.test(timestamp)) return false;
  return Math.abs(nowMs / 1000 - Number(timestamp)) <= WEBHOOK_TOLERANCE_SECONDS;
}

/** `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>` (or the SHA-1 `X-Hub-Signature`): GitHub, and Meta's apps. */
const hubSignature: Scheme = (request, secret) => {
  const sha256 = header(request, 'x-hub-signature-256');
  const sha1 = header(request, 'x-hub-signature');
  if (sha256 !== undefined) {
    return sha256.startsWith('sha256=') && hexMatches(hmac('sha256', secret, request.body), sha256.slice(7)) ? ok : no('the X-Hub-Signature-256 signature does not match');
  }
  if (sha1 !== undefined) return sha1.startsWith('sha1=') && hexMatches(hmac('sha1', secret, request.body), sha1.slice(5)) ? ok : no('the X-Hub-Signature signature does not match');
  return no('the request has no X-Hub-Signature-256 header');
};

/** Stripe-Signature: `t=<unix>,v1=<hex HMAC-SHA256(secret, "t.body")>` (any v1 may match, for secret rotation). */
const stripe: Scheme = (request, secret, nowMs) => {
  const value = header(request, 'stripe-signature');
  if (value === undefined) return no('the request has no Stripe-Signature header');
  const parts = value.split(',').map((part) => part.trim().split('=', 2) as [string, string | undefined]);
  const timestamp = parts.find(([k]) => k === 't')?.[1];
  if (timestamp === undefined) return no('the Stripe-Signature header has no timestamp');
  const expected = hmac('sha256', secret, `${timestamp}.`, request.body);
  if (!parts.some(([k, v]) => k === 'v1' && v !== undefined && hexMatches(expected, v))) return no('the Stripe-Signature signature does not match');
  return fresh(timestamp, nowMs) ? ok : no('the Stripe-Signature timestamp is outside the tolerance (a replay?)');
};

/** `<prefix>=hex(HMAC-SHA256(secret, "v0:<ts>:body"))` with a timestamp header: Slack, Zoom. */
function versionZero(signatureHeader: string, timestampHeader: string): Scheme {
  return (request, secret, nowMs) => {
    const signature = header(request, signatureHeader);
    const timestamp = header(request, timestampHeader);
    if (signature === undefined || timestamp === undefined) return no(`the request lacks the ${signatureHeader} or ${timestampHeader} header`);
    const expected = hmac('sha256', secret, `v0:${timestamp}:`, request.body);
    if (!signature.startsWith('v0=') || !hexMatches(expected, signature.slice(3))) return no(`the ${signatureHeader} signature does not match`);
    return fresh(timestamp, nowMs) ? ok : no(`the ${timestampHeader} timestamp is outside the tolerance (a replay?)`);
  };
}

/** `X-Shopify-Hmac-Sha256: base64(HMAC-SHA256(secret, body))`. */
const shopify: Scheme = (request, secret) => {
  const value = header(request, 'x-shopify-hmac-sha256');
  if (value === undefined) return no('the request has no X-Shopify-Hmac-Sha256 header');
  return base64Matches(hmac('sha256', secret, request.body), value) ? ok : no('the X-Shopify-Hmac-Sha256 signature does not match');
};

/**
 * `X-Twilio-Signature: base64(HMAC-SHA1(auth token, url + each form field's name and value, sorted by name))`;
 * a JSON body is signed through the URL's `bodySHA256` parameter instead.
 */
const twilio: Scheme = (request, secret) => {
  const value = header(request, 'x-twilio-signature');
  if (value === undefined) return no('the request has no X-Twilio-Signature header');
  let signed = request.url;
  const type = header(request, 'content-type') ?? '';
  if (/^application\/x-www-form-urlencoded/i.test(type)) {
    const fields = [...new URLSearchParams(request.body.toString('utf8'))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [name, field] of fields) signed += name + field;
  }
  return base64Matches(hmac('sha1', secret, signed), value) ? ok : no('the X-Twilio-Signature signature does not match');
};

/** Svix / Standard Webhooks: `svix-signature: v1,base64(HMAC-SHA256(base64 secret after "whsec_", "id.ts.body"))`. Clerk signs with Svix. */
const svix: Scheme = (request, secret, nowMs) => {
  const id = header(request, 'svix-id') ?? header(request, 'webhook-id');
  const timestamp = header(request, 'svix-timestamp') ?? header(request, 'webhook-timestamp');
  const signatures = header(request, 'svix-signature') ?? header(request, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) return no('the request lacks the svix-id, svix-timestamp or svix-signature header');
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const expected = hmac('sha256', key, `${id}.${timestamp}.`, request.body);
  const matches = signatures.split(' ').some((entry) => entry.startsWith('v1,') && base64Matches(expected, entry.slice(3)));
  if (!matches) return no('the svix-signature signature does not match');
  return fresh(timestamp, nowMs) ? ok : no('the svix-timestamp is outside the tolerance (a replay?)');
};

/** `Linear-Signature: hex(HMAC-SHA256(secret, body))`. */
const linear: Scheme = (request, secret) => {
  const value = header(request, 'linear-signature');
  if (value === undefined) return no('the request has no Linear-Signature header');
  return hexMatches(hmac('sha256', secret, request.body), value) ? ok : no('the Linear-Signature signature does not match');
};

/** `X-Gitlab-Token`: GitLab sends the secret token itself, compared in constant time. */
const gitlab: Scheme = (request, secret) => {
  const value = header(request, 'x-gitlab-token');
  if (value === undefined) return no('the request has no X-Gitlab-Token header');
  return same(hmac('sha256', 'gitlab', secret), hmac('sha256', 'gitlab', value)) ? ok : no('the X-Gitlab-Token does not match');
};

/** `x-square-hmacsha256-signature: base64(HMAC-SHA256(key, notification url + body))`. */
const square: Scheme = (request, secret) => {
  const value = header(request, 'x-square-hmacsha256-signature');
  if (value === undefined) return no('the request has no x-square-hmacsha256-signature header');
  return base64Matches(hmac('sha256', secret, request.url, request.body), value) ? ok : no('the x-square-hmacsha256-signature signature does not match');
};

/** The providers served, by the reference's identifiers. */
const SCHEMES: ReadonlyMap<string, Scheme> = new Map([
  ['github', hubSignature],
  ['facebook_graph_api', hubSignature],
  ['facebook_messenger', hubSignature],
  ['instagram', hubSignature],
  ['whatsapp', hubSignature],
  ['stripe', stripe],
  ['slack', versionZero('x-slack-signature', 'x-slack-request-timestamp')],
  ['zoom', versionZero('x-zm-signature', 'x-zm-request-timestamp')],
  ['shopify', shopify],
  ['twilio', twilio],
  ['svix', svix],
  ['clerk', svix],
  ['linear', linear],
  ['gitlab', gitlab],
  ['square', square],
]);

export const WEBHOOK_PROVIDERS: readonly string[] = [...SCHEMES.keys()];

export function isWebhookProvider(name: string): boolean {
  return SCHEMES.has(name);
}

export function verifyWebhook(provider: string, secret: string, request: WebhookRequest, nowMs: number): WebhookVerdict {
  const scheme = SCHEMES.get(provider);
  if (!scheme) return no(`the provider ${provider} is not served`);
  return scheme(request, secret, nowMs);
}

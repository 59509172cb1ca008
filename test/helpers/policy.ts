import type { PolicyConnection } from '../../src/domain/policy/index.js';

/** A connection to evaluate traffic policies on: a TLS edge on port 443, a client from a documentation range. */
export const POLICY_CONNECTION: PolicyConnection = Object.freeze({
  clientIp: '203.0.113.7',
  clientPort: 51000,
  serverIp: '192.0.2.10',
  serverPort: 443,
  region: 'eu',
  startedAt: 0,
  endpoint: Object.freeze({ url: 'tls://app.example.com:443', addr: 'app.example.com:443', host: 'app.example.com', id: 'edghts_123', protocol: 'tls', port: 443 }),
  now: 1000,
});

/** A connection to an https endpoint on `host`, from 203.0.113.7, accepted a second before `now`. */
export function httpsConnection(host: string, now: number): PolicyConnection {
  return {
    clientIp: '203.0.113.7',
    clientPort: 50123,
    serverIp: '10.0.0.1',
    serverPort: 443,
    region: 'eu',
    startedAt: now - 1000,
    endpoint: { url: `https://${host}`, addr: `${host}:443`, host, id: 'ep_1', protocol: 'https', port: 443 },
    now,
  };
}

/** The webhook secret of TRIAL_HTTP_POLICY's first rule. */
export const TRIAL_WEBHOOK_SECRET = 's3cret-hook';

/**
 * One HTTP policy for the policy test of HTTP-POLICY.md §6, through `burrow policy test` and
 * `POST /traffic_policy/test` alike: rule 1 verifies a webhook on /hook, rule 2 denies /private,
 * rule 3 edits every other request (its path /v1/ → /v2/); the answer loses Server, gains x-status.
 */
export const TRIAL_HTTP_POLICY = `on_http_request:
  - name: hooks
    expressions: ["req.url.path == '/hook'"]
    actions:
      - type: verify-webhook
        config: {provider: github, secret: ${TRIAL_WEBHOOK_SECRET}}
  - name: private
    expressions: ["req.url.path.startsWith('/private')"]
    actions:
      - type: deny
  - name: tag
    actions:
      - type: add-headers
        config: {headers: {x-client: "\${conn.client_ip}", x-q: "\${getQueryParam('q')[0]}"}}
      - type: url-rewrite
        config: {from: "/v1/", to: "/v2/"}
      - type: log
        config: {metadata: {path: "\${req.url.path}"}}
on_http_response:
  - actions:
      - type: remove-headers
        config: {headers: [server]}
      - type: add-headers
        config: {headers: {x-status: "\${res.status_code}"}}
`;

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

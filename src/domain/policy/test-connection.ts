/**
 * The connection of a policy test (HTTP-POLICY.md §6), from the values `burrow policy test`'s
 * flags and the API's `connection` give, once each caller has checked them in its own words.
 * Kept apart from policy-test.ts, which loads the expression engine: the CLI builds it without.
 */
import { formatTimestamp } from '../ids.js';
import { publicUrl } from '../tunnels/binds.js';
import type { PolicyConnection } from './activation.js';

export interface TestConnectionValues {
  clientIp: string;
  clientPort: number;
  serverIp: string;
  serverPort: number;
  region: string;
  /** The endpoint or TLS edge host reached; "" for none. */
  endpointHost: string;
  /** `time.now` and `conn.ts.start`, in ms. */
  now: number;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** `text` as ms since the epoch, or undefined when it is not an RFC 3339 time. */
export function parseTestTime(text: string): number | undefined {
  const ms = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(ms) ? undefined : ms;
}

/** Whether `host` can be the endpoint host (no space, no slash). */
export function isTestEndpointHost(host: string): boolean {
  return !/[\s/]/.test(host);
}

/** The connection evaluated: a TLS endpoint on the server port, named by the host when one is given. */
export function testConnection(values: TestConnectionValues): PolicyConnection {
  const { endpointHost: host, serverPort, now } = values;
  return {
    clientIp: values.clientIp,
    clientPort: values.clientPort,
    serverIp: values.serverIp,
    serverPort,
    region: values.region,
    startedAt: now,
    now,
    endpoint: host
      ? { host, port: serverPort, addr: `${host}:${serverPort}`, url: publicUrl('tls', host, serverPort), protocol: 'tls' }
      : { port: serverPort, protocol: 'tls' },
  };
}

/** When the test is shown: the connection as it was evaluated, in the API's snake_case. */
export function describeTestConnection(connection: PolicyConnection): Record<string, string | number> {
  return {
    client_ip: connection.clientIp,
    client_port: connection.clientPort,
    server_ip: connection.serverIp,
    server_port: connection.serverPort,
    region: connection.region,
    endpoint_host: connection.endpoint.host ?? '',
    time: formatTimestamp(Math.floor(Number(connection.now) / 1000)),
  };
}

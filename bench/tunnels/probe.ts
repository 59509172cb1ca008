import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { Route } from './paths.js';
import { header } from './wire.js';

/**
 * One request over a route before any load, so that a path that cannot carry traffic is left
 * out with a clear reason instead of filling a table with errors. Resolves to the problem, or
 * undefined when the answer came back.
 */
const TIMEOUT_MS = 5000;

export function probeEcho(route: Route): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = route.servername
      ? tls.connect({ host: route.host, port: route.port, servername: route.servername, rejectUnauthorized: false })
      : net.connect({ host: route.host, port: route.port });
    const payload = 'probe\n';
    let answer = '';
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(`no echo within ${TIMEOUT_MS} ms`), TIMEOUT_MS);
    socket.on('error', (error) => done(`connection failed: ${error.message}`));
    socket.on('data', (data: Buffer) => {
      answer += data.toString('latin1');
      if (answer === payload) done(undefined);
    });
    socket.on('close', () => done(`closed before the echo${answer ? ` (got ${JSON.stringify(answer.slice(0, 80))})` : ''}`));
    socket.write(header({ kind: 'echo' }) + payload);
  });
}

/** `expectedStatus` other than 200: the body is not compared (a policy's refusal). */
export function probeHttp(route: Route, expectedBody: string, headers: Record<string, string> = {}, expectedStatus = 200): Promise<string | undefined> {
  return new Promise((resolve) => {
    const request = http.get(
      { host: route.host, port: route.port, path: '/', headers: { ...headers, ...(route.hostHeader ? { host: route.hostHeader } : {}) }, timeout: TIMEOUT_MS, agent: false },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve(response.statusCode === expectedStatus && (expectedStatus !== 200 || body === expectedBody) ? undefined : `answered ${response.statusCode}: ${body.slice(0, 120).trim()}`));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    request.on('error', (error) => resolve(`request failed: ${error.message}`));
  });
}

import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { CliUsageError, configFor, print } from './context.js';
import { readOAuthProviders, type Config } from '../config.js';
import { useOAuthProviders } from '../domain/identity/oauth-providers.js';
import { parseIp } from '../domain/policy/cidr.js';
import type { HttpDecision, PolicyConnection } from '../domain/policy/index.js';
import type { HttpTestResult, JwtCheck } from '../domain/policy/policy-test.js';
import { describeTestConnection, isTestEndpointHost, parseTestTime, testConnection } from '../domain/policy/test-connection.js';
import { readHttpFlags } from './policy-http.js';

/** `burrow policy validate|test`: the server's own validator and engine, offline. */
export function policyCommand(): Command {
  const policy = new Command('policy').description('work with traffic policy documents');
  policy
    .command('validate <file>')
    .description('check a traffic policy document (YAML or JSON, "-" for stdin) as PUT /edges/tls/{id}/traffic_policy would')
    .option('--max-rules <n>', 'rules allowed (default: MAX_POLICY_RULES, else 25)')
    .option('--endpoint <kind>', "as an agent's policy for an endpoint of this kind (http, https, tcp, tls), whose phases it decides; default: a TLS edge's module")
    .action(async (file: string, options: { maxRules?: string; endpoint?: string }, command: Command) => {
      const maxRules = options.maxRules === undefined ? configFor(command).maxPolicyRules : /^\d{1,4}$/.test(options.maxRules) ? Number(options.maxRules) : Number.NaN;
      if (!(maxRules >= 1 && maxRules <= 1000)) throw new CliUsageError('--max-rules must be a whole number from 1 to 1000.');
      const endpoint = options.endpoint;
      if (endpoint !== undefined && !['http', 'https', 'tcp', 'tls'].includes(endpoint)) throw new CliUsageError('--endpoint must be http, https, tcp or tls.');
      const source = file === '-' ? await readStdin() : await readFile(file, 'utf8');
      useServerOAuthProviders();
      const { validatePolicy } = await import('../domain/policy/index.js');
      const result = validatePolicy(source, endpoint === undefined ? { maxRules } : { maxRules, endpoint: endpoint as 'http', subject: 'endpoint' });
      if (result.ok) {
        const rules = Object.values(result.policy.phases).reduce((sum, list) => sum + list.length, 0);
        print(`${file}: valid (${rules} rule${rules === 1 ? '' : 's'}).`);
        return;
      }
      process.stderr.write(`${file}: ${result.error.code}: ${result.error.message}\n`);
      process.exitCode = 1;
    });
  policy
    .command('test <file>')
    .description(
      'evaluate a traffic policy document (YAML or JSON, "-" for stdin) on one connection with the engine burrow runs on every connection; exit 0 allowed, 1 closed, 2 invalid document or flag',
    )
    .option('--client-ip <ip>', 'the client address (required), IPv4 or IPv6')
    .option('--client-port <n>', 'the client port', '50000')
    .option('--server-ip <ip>', 'the address the connection reached', '127.0.0.1')
    .option('--server-port <n>', 'the port the connection reached (also endpoint.port)', '443')
    .option('--endpoint-host <host>', 'the endpoint or TLS edge host reached (endpoint.host; addr and url follow)')
    .option('--region <name>', 'conn.server_region (default: the REGION environment variable, else "local")')
    .option('--time <rfc3339>', 'time.now and conn.ts.start, e.g. 2024-05-01T12:00:00Z (default: now)')
    .option('--max-rules <n>', 'rules allowed (default: MAX_POLICY_RULES, else 25)')
    .option('--json', 'print the verdict as JSON')
    .option('--request <line>', "an HTTP request through an http/https endpoint, e.g. 'GET /path?q=1': runs its HTTP phases too")
    .option('--header <line>', "a request header 'Name: value' (repeatable)", collect, [])
    .option('--body-file <file>', 'the request body')
    .option('--endpoint-url <url>', 'the endpoint reached, e.g. https://app.example.com (default https://<endpoint-host>)')
    .option('--response-status <n>', "the agent's answer's status: runs on_http_response on it")
    .option('--response-header <line>', "a header 'Name: value' of the agent's answer (repeatable)", collect, [])
    .action(async (file: string, options: TestOptions, command: Command) => {
      const input = readTestOptions(options, () => configFor(command));
      if (typeof input === 'string') return usage(input);
      let source: string;
      let body: Buffer | undefined;
      try {
        source = file === '-' ? await readStdin() : await readFile(file, 'utf8');
      } catch (error) {
        return usage(`${file}: ${error instanceof Error ? error.message : String(error)}`);
      }
      try {
        if (options.bodyFile !== undefined) body = await readFile(options.bodyFile);
      } catch (error) {
        return usage(`--body-file: ${error instanceof Error ? error.message : String(error)}`);
      }
      const http = options.request === undefined ? undefined : readHttpFlags({ ...options, request: options.request }, input.connection, body);
      if (options.request === undefined && (options.header.length > 0 || body || options.endpointUrl || options.responseStatus || options.responseHeader.length > 0)) {
        return usage('--header, --body-file, --endpoint-url and --response-* need --request.');
      }
      if (typeof http === 'string') return usage(http);
      useServerOAuthProviders();
      const { testPolicy } = await import('../domain/policy/policy-test.js');
      const { connectionReport, httpReport } = await import('../domain/policy/policy-test-report.js');
      const outcome = await testPolicy(source, input.maxRules, input.connection, http, await cliJwtCheck());
      if (!outcome.ok) {
        if (options.json) print(JSON.stringify({ file, valid: false, error: outcome.error }));
        process.stderr.write(`${file}: ${outcome.error.code}: ${outcome.error.message}\n`);
        process.exitCode = 2;
        return;
      }
      const { program, verdict } = outcome;
      if (http && outcome.http) {
        const result = outcome.http;
        if (options.json) print(JSON.stringify({ file, valid: true, connection: describeTestConnection(input.connection), ...httpJson(result) }));
        else for (const line of httpReport(file, program, http, result)) print(line);
        process.exitCode = result.allowed ? 0 : 1;
        return;
      }
      if (options.json) {
        const { closedBy, ...rest } = verdict; // the API's snake_case, as every other key
        print(JSON.stringify({ file, valid: true, connection: describeTestConnection(input.connection), ...rest, ...(closedBy ? { closed_by: closedBy } : {}) }));
      }
      else for (const line of connectionReport(file, program.rules, input.connection, verdict)) print(line);
      process.exitCode = verdict.allowed ? 0 : 1;
    });
  return policy;
}

interface TestOptions {
  clientIp?: string;
  clientPort: string;
  serverIp: string;
  serverPort: string;
  endpointHost?: string;
  region?: string;
  time?: string;
  maxRules?: string;
  json?: boolean;
  request?: string;
  header: string[];
  bodyFile?: string;
  endpointUrl?: string;
  responseStatus?: string;
  responseHeader: string[];
}

/** The OAuth providers `burrow serve` knows here: the built-in ones and OAUTH_PROVIDERS_FILE's (a bad file: exit 2). */
function useServerOAuthProviders(): void {
  useOAuthProviders(readOAuthProviders());
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function httpJson(result: HttpTestResult): Record<string, unknown> {
  const phase = (decision: HttpDecision | undefined) =>
    decision && { actions: decision.taken.map((t) => ({ rule: t.rule, type: t.type })), errors: decision.errors, logs: decision.logs, answer: decision.answer ?? null };
  return {
    allowed: result.allowed,
    on_http_request: phase(result.request),
    ...(result.response ? { on_http_response: phase(result.response) } : {}),
    forwarded: result.forwarded ?? null,
    answer: result.answer ?? null,
  };
}

/** A bad flag: one line, exit 2 (like an invalid document: the test could not run). */
function usage(message: string): void {
  process.stderr.write(`burrow: ${message}\n`);
  process.exitCode = 2;
}

/** The connection the flags describe, or the one-line reason they do not describe one. */
function readTestOptions(options: TestOptions, config: () => Config): { connection: PolicyConnection; maxRules: number } | string {
  if (options.clientIp === undefined) return '--client-ip is required, e.g. --client-ip 203.0.113.7.';
  if (!isIp(options.clientIp)) return `--client-ip ${JSON.stringify(options.clientIp)} is not an IPv4 or IPv6 address.`;
  if (!isIp(options.serverIp)) return `--server-ip ${JSON.stringify(options.serverIp)} is not an IPv4 or IPv6 address.`;
  const clientPort = port(options.clientPort);
  if (clientPort === undefined) return `--client-port ${JSON.stringify(options.clientPort)} must be a whole number from 1 to 65535.`;
  const serverPort = port(options.serverPort);
  if (serverPort === undefined) return `--server-port ${JSON.stringify(options.serverPort)} must be a whole number from 1 to 65535.`;
  const now = options.time === undefined ? Date.now() : parseTestTime(options.time);
  if (now === undefined) return `--time ${JSON.stringify(options.time)} is not an RFC 3339 time such as 2024-05-01T12:00:00Z.`;
  let maxRules: number;
  if (options.maxRules === undefined) {
    maxRules = config().maxPolicyRules;
  } else {
    maxRules = /^\d{1,4}$/.test(options.maxRules) ? Number(options.maxRules) : Number.NaN;
    if (!(maxRules >= 1 && maxRules <= 1000)) return '--max-rules must be a whole number from 1 to 1000.';
  }
  const endpointHost = options.endpointHost ?? '';
  if (!isTestEndpointHost(endpointHost)) return `--endpoint-host ${JSON.stringify(endpointHost)} is not a host name.`;
  const region = options.region ?? config().tunnels.region;
  return { maxRules, connection: testConnection({ clientIp: options.clientIp, clientPort, serverIp: options.serverIp, serverPort, region, endpointHost, now }) };
}

function isIp(text: string): boolean {
  // The engine's own strict parser (cidr.ts imports nothing, so this does not load CEL for --help).
  return parseIp(text) !== null;
}

function port(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const value = Number(text);
  return value >= 1 && value <= 65535 ? value : undefined;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The CLI's trial fetches jwt-validation's key sets as the data plane does. */
async function cliJwtCheck(): Promise<JwtCheck> {
  const { JwtVerifier } = await import('../domain/identity/jwt-verify.js');
  const verifier = new JwtVerifier();
  return (config, tokens) => verifier.verify(config, tokens);
}

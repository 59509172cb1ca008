import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import type { TunnelConfig } from '../config.js';
import { CliUsageError, configFor, print } from './context.js';

/**
 * `burrow agent-config [--token T] [--sdk [--inline-ca]]`: what an agent needs to reach this
 * burrow, from the same configuration `serve` reads: the ngrok agent's configuration file
 * (YAML, so `> ngrok.yml` works), or with --sdk a program for the `@ngrok/ngrok` SDK.
 */
export function agentConfigCommand(): Command {
  return new Command('agent-config')
    .description("print an ngrok agent configuration file for this burrow (server_addr, root_cas, authtoken, update_check: false), or with --sdk an @ngrok/ngrok program")
    .option('--server-addr <host:port>', 'the address agents dial, when a relay or load balancer stands before the agent port (default: AGENT_HOSTNAME or localhost, and AGENT_PORT)')
    .option('--token <authtoken>', 'the authtoken to write in (default: a placeholder; see burrow credentials create)')
    .option('--sdk', 'print a Node.js program for the @ngrok/ngrok SDK instead')
    .option('--forward <url>', 'with --sdk: the local service the program serves', 'http://localhost:3000')
    .option('--inline-ca', "with --sdk: write the CA's PEM into the program instead of its path (for an agent on another machine)")
    .action((options: { serverAddr?: string; token?: string; sdk?: boolean; inlineCa?: boolean; forward: string }, command: Command) => {
      if (!/^(https?|tcp|tls):\/\/\S+$/.test(options.forward)) throw new CliUsageError(`--forward ${JSON.stringify(options.forward)} is not a URL such as http://localhost:3000.`);
      if (options.inlineCa && !options.sdk) throw new CliUsageError('--inline-ca goes with --sdk: the ngrok agent reads root_cas from a file.');
      if (options.token !== undefined && !/^\S+$/.test(options.token)) throw new CliUsageError('--token must be an authtoken: one word, no spaces.');
      if (options.serverAddr !== undefined && !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(options.serverAddr)) {
        throw new CliUsageError(`--server-addr ${JSON.stringify(options.serverAddr)} is not host:port (an IPv6 address in brackets).`);
      }
      const target = agentTarget(configFor(command).tunnels, options.serverAddr);
      for (const line of options.sdk ? sdkProgram(target, options.token, !!options.inlineCa, options.forward) : agentFile(target, options.token)) print(line);
    });
}

interface AgentTarget {
  serverAddr: string;
  /** Absolute path of burrow's CA; undefined when AGENT_TLS_CERT brings a certificate of its own. */
  caPath: string | undefined;
}

function agentTarget(config: TunnelConfig, serverAddr: string | undefined): AgentTarget {
  if (config.agentPort === 0 && serverAddr === undefined) throw new Error('AGENT_PORT is 0 here: this configuration runs no data plane. Run agent-config with the data-plane instance\'s variables.');
  const host = config.agentHostname ?? 'localhost';
  const address = serverAddr ?? `${host.includes(':') ? `[${host}]` : host}:${config.agentPort}`;
  if (config.agentTlsCert !== undefined) return { serverAddr: address, caPath: undefined };
  const caPath = resolve(config.tlsDir, 'ca.pem');
  if (!existsSync(caPath)) throw new Error(`No CA at ${caPath} yet: start burrow serve once (it creates it), with the same TLS_DIR.`);
  return { serverAddr: address, caPath };
}

/** The ngrok agent's configuration file (version 2, which ngrok 2.x and 3.x both read). */
function agentFile(target: AgentTarget, token: string | undefined): string[] {
  return [
    '# ngrok agent configuration for this burrow: ngrok start --config ngrok.yml --none (or ngrok http 3000 --config ngrok.yml)',
    'version: "2"',
    token === undefined ? 'authtoken: "<an authtoken from: burrow credentials create>"' : `authtoken: ${JSON.stringify(token)}`,
    `server_addr: ${JSON.stringify(target.serverAddr)}`,
    // "host": the system's roots, for an AGENT_TLS_CERT from a public CA (the agent's default trusts ngrok's CA only)
    `root_cas: ${JSON.stringify(target.caPath ?? 'host')}`,
    '# burrow serves no agent updates: without this the agent calls ngrok.com to look for one',
    'update_check: false',
  ];
}

function sdkProgram(target: AgentTarget, token: string | undefined, inlineCa: boolean, forward: string): string[] {
  const scheme = forward.slice(0, forward.indexOf(':'));
  const endpoint = scheme === 'tcp' ? 'tcpEndpoint()' : scheme === 'tls' ? 'tlsEndpoint()' : 'httpEndpoint()';
  const ca =
    target.caPath === undefined
      ? ["  // .caCert(readFileSync('<the CA that issued AGENT_TLS_CERT>')): the SDK trusts only ngrok's own CA unless told"]
      : inlineCa
        ? [`  .caCert(Buffer.from(${JSON.stringify(readFileSync(target.caPath, 'utf8'))}))`]
        : [`  .caCert(readFileSync(${JSON.stringify(target.caPath)}))`];
  return [
    '// agent.mjs for this burrow (npm install @ngrok/ngrok; node agent.mjs)',
    "import ngrok from '@ngrok/ngrok';",
    ...(inlineCa ? [] : ["import { readFileSync } from 'node:fs';"]),
    '',
    'const session = await new ngrok.SessionBuilder()',
    token === undefined ? '  .authtokenFromEnv() // NGROK_AUTHTOKEN, from: burrow credentials create' : `  .authtoken(${JSON.stringify(token)})`,
    `  .serverAddr(${JSON.stringify(target.serverAddr)})`,
    ...ca,
    '  .connect();',
    `const listener = await session.${endpoint}.listenAndForward(${JSON.stringify(forward)}); // your local service`,
    'console.log(listener.url());',
    '// the SDK does not keep Node running by itself (and stdin may be closed under nohup or a service manager)',
    'setInterval(() => {}, 1 << 30);',
  ];
}

import { parseArgs } from 'node:util';

/** Everything `npm run bench -- <flags>` can change. */
export interface BenchOptions {
  mode: 'compare' | 'scale' | 'profile' | 'tunnels';
  scenarios: string[];
  /** Seconds per measured round. */
  duration: number;
  rounds: number;
  /** Seconds of unmeasured load per target and scenario before its rounds. */
  warmup: number;
  connections: number;
  /** Credentials in the large data set of --scale. */
  scaleRows: number;
  jsonFile: string | undefined;
  /** Run the server from src/ through tsx instead of dist/ (no build). */
  source: boolean;
  /** Pin servers to CPU 0 and the load generator to the other CPUs (taskset); on unless --no-pin (--tunnels: off unless --pin). */
  pin: boolean;
  /** Keep the temporary directory (databases, profiles) instead of removing it. */
  keep: boolean;
  /** --tunnels: exit 0 even when a target is missed. */
  noFail: boolean;
  /** --tunnels: MB per bulk transfer, SDK sessions of idle-sessions, connections of streams. */
  bulkMb: number;
  sessions: number;
  streams: number;
  /** --tunnels: run burrow under node --cpu-prof and summarise the profile. */
  cpuProf: boolean;
  /** --tunnels: record burrow with Linux perf (on-CPU samples) and summarise them. */
  perf: boolean;
}

export const COMPARE_SCENARIOS = ['get', 'create', 'update', 'list', 'policy'];
export const SCALE_SCENARIOS = ['get', 'list'];
export const PROFILE_SCENARIOS = ['get', 'create', 'update'];
export const TUNNEL_SCENARIOS = ['bulk', 'connections', 'http', 'http64k', 'http-close', 'tls-edge', 'policy', 'http-policy', 'capture', 'streams', 'forwarding', 'idle-sessions'];

const USAGE = `npm run bench -- [flags]

  (no mode flag)       burrow against a bare node:http baseline, A B A B
  --scale              get/list at 1,000 vs --rows credentials (default 1,000,000), peak RSS
  --profile            where the time goes: node --cpu-prof and (when usable) perf, per scenario,
                       with the bare baseline profiled as the floor
  --tunnels            the data plane: direct, TCP relay, TLS relay pair, localtunnel and burrow
                       (SDK agent) under the same loads; exits 1 when burrow misses a target
                       against the TLS relay pair or the TCP relay

  --scenarios a,b      compare: ${COMPARE_SCENARIOS.join(',')} (default all)
                       scale: ${SCALE_SCENARIOS.join(',')} (default), list_deep
                       profile: any of the compare ones (default ${PROFILE_SCENARIOS.join(',')})
  --tunnels-scenarios a,b  tunnels: ${TUNNEL_SCENARIOS.join(',')} (default all)
  --duration S         seconds per measured round (default 5; tunnels 10)
  --rounds N           measured rounds per target (default 3)
  --warmup S           unmeasured seconds per target before the rounds (default 2)
  --connections N      concurrent keep-alive connections (default 32)
  --rows N             credentials for --scale (default 1000000)
  --json FILE          write every figure, with machine info, to FILE
  --source             run the server from src/ through tsx instead of dist/
  --no-pin             do not pin (by default servers run on CPU 0 and the load generator on the
                       other CPUs, via taskset, so client and server never preempt each other;
                       --tunnels does not pin unless --pin is given: see bench/README.md)
  --keep               keep the temporary directory (databases, .cpuprofile, perf.data)

  tunnels only:
  --no-fail            exit 0 even when a target is missed
  --pin                pin every path's processes to CPU 0, the load generator to the others
  --bulk-mb N          MB per bulk transfer (default 256)
  --sessions N         SDK sessions of idle-sessions (default 1000)
  --streams N          slow connections of streams (default 400)
  --cpu-prof           run burrow under node --cpu-prof and print where its time went (run one
                       scenario with --tunnels-scenarios to profile just that one)
  --perf               record burrow with Linux perf while the scenarios run and print where its
                       CPU went (on-CPU samples: kernel, TLS, GC, JavaScript); unlike --cpu-prof,
                       time burrow spends preempted or waiting inside a syscall is not counted
`;

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      scale: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      tunnels: { type: 'boolean', default: false },
      scenarios: { type: 'string' },
      'tunnels-scenarios': { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '32' },
      rows: { type: 'string', default: '1000000' },
      json: { type: 'string' },
      source: { type: 'boolean', default: false },
      'no-pin': { type: 'boolean', default: false },
      pin: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      'no-fail': { type: 'boolean', default: false },
      'bulk-mb': { type: 'string', default: '256' },
      sessions: { type: 'string', default: '1000' },
      streams: { type: 'string', default: '400' },
      'cpu-prof': { type: 'boolean', default: false },
      perf: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if ([values.scale, values.profile, values.tunnels].filter(Boolean).length > 1) {
    throw new UsageError('--scale, --profile and --tunnels are separate modes; pick one.');
  }
  const mode = values.scale ? 'scale' : values.profile ? 'profile' : values.tunnels ? 'tunnels' : 'compare';
  if (mode !== 'tunnels' && values['tunnels-scenarios'] !== undefined) throw new UsageError('--tunnels-scenarios goes with --tunnels.');
  if (mode === 'tunnels' && values.scenarios !== undefined) throw new UsageError('with --tunnels, pick scenarios with --tunnels-scenarios.');
  if ((values['cpu-prof'] || values.perf) && mode !== 'tunnels') throw new UsageError('--cpu-prof and --perf go with --tunnels (--profile profiles the REST API).');
  if (values['cpu-prof'] && values.perf) throw new UsageError('--cpu-prof and --perf each change what burrow runs under; pick one.');
  const known = mode === 'scale' ? [...SCALE_SCENARIOS, 'list_deep'] : mode === 'tunnels' ? TUNNEL_SCENARIOS : COMPARE_SCENARIOS;
  const defaults = mode === 'scale' ? SCALE_SCENARIOS : mode === 'profile' ? PROFILE_SCENARIOS : mode === 'tunnels' ? TUNNEL_SCENARIOS : COMPARE_SCENARIOS;
  const picked = mode === 'tunnels' ? values['tunnels-scenarios'] : values.scenarios;
  const scenarios = picked === undefined ? defaults : picked.split(',').map((s) => s.trim()).filter(Boolean);
  for (const name of scenarios) {
    if (!known.includes(name)) throw new UsageError(`Unknown scenario "${name}" for this mode; known: ${known.join(', ')}.`);
  }
  if (scenarios.length === 0) throw new UsageError('--scenarios names no scenario.');
  return {
    mode,
    scenarios,
    duration: positive('duration', values.duration ?? (mode === 'tunnels' ? '10' : '5')),
    rounds: Math.round(positive('rounds', values.rounds)),
    warmup: nonNegative('warmup', values.warmup),
    connections: Math.round(positive('connections', values.connections)),
    scaleRows: Math.round(positive('rows', values.rows)),
    jsonFile: values.json,
    source: values.source,
    // A tunnel path is three processes (burrow, agent, local server) against direct's one: on one
    // pinned core they would be charged for sharing it, which no deployment does.
    pin: mode === 'tunnels' ? values.pin && !values['no-pin'] : !values['no-pin'],
    keep: values.keep,
    noFail: values['no-fail'],
    bulkMb: positive('bulk-mb', values['bulk-mb']),
    sessions: Math.round(positive('sessions', values.sessions)),
    streams: Math.round(positive('streams', values.streams)),
    cpuProf: values['cpu-prof'],
    perf: values.perf,
  };
}

export class UsageError extends Error {
  readonly usage = USAGE;
}

function positive(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`--${name} must be a positive number, not "${text}".`);
  return value;
}

function nonNegative(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new UsageError(`--${name} must be zero or more, not "${text}".`);
  return value;
}

import { memoryOf } from '../procfs.js';
import { fmt, table, type Target } from '../report.js';
import { startAgent, type Agent, type BurrowDataPlane } from './burrow.js';
import { targetLines, type ScenarioOutcome, type ScenarioTools } from './scenarios.js';

const SESSIONS_PER_PROCESS = 250;
/** The SDK heartbeats every 10 s by default: a round is every session answered within 25 s. */
const HEARTBEAT_ROUND_MS = 25_000;

/**
 * `sessions` SDK sessions, one http endpoint each, from agent processes of 250 sessions: burrow's
 * RSS growth per session once they are all up, and whether a heartbeat round is answered for all.
 */
export async function idleSessionsScenario(t: ScenarioTools, plane: BurrowDataPlane, httpForward: string): Promise<ScenarioOutcome> {
  const count = t.options.sessions;
  const processes = Math.ceil(count / SESSIONS_PER_PROCESS);
  const describe = `${count} idle SDK sessions with one http endpoint each (${processes} agent processes)`;
  const pid = plane.server.pid;
  const beforeMb = memoryOf(pid)?.rssMb ?? NaN;
  const agents: Agent[] = [];
  const started = performance.now();
  let problem: string | undefined;
  try {
    await Promise.all(
      Array.from({ length: processes }, async (_, i) => {
        const sessions = Math.min(SESSIONS_PER_PROCESS, count - i * SESSIONS_PER_PROCESS);
        const { agent } = await startAgent(plane, `idle agent ${i + 1}`, { sessions, idleForward: httpForward }, 60_000 + sessions * 400);
        agents.push(agent);
      }),
    );
  } catch (error) {
    problem = String(error instanceof Error ? error.message : error).split('\n').slice(0, 3).join(' ');
  }
  const connectSeconds = (performance.now() - started) / 1000;
  const targets: Target[] = [];
  let json: Record<string, unknown> = {};
  let body: string;
  if (problem) {
    body = `idle-sessions: the sessions could not all connect: ${problem}`;
    targets.push({ name: 'idle sessions: all connected', goal: `${count}`, measured: problem.slice(0, 200), met: false });
  } else {
    t.log(`idle      ${count} sessions up in ${connectSeconds.toFixed(1)} s; settling 2 s, then a heartbeat round (≤ ${HEARTBEAT_ROUND_MS / 1000} s)`);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const afterMb = memoryOf(pid)?.rssMb ?? NaN;
    const rounds = await Promise.all(agents.map((a) => a.heartbeats(HEARTBEAT_ROUND_MS)));
    const answered = rounds.reduce((sum, r) => sum + r.answered, 0);
    const perSessionKiB = ((afterMb - beforeMb) * 1024) / count;
    targets.push(
      { name: 'idle sessions: burrow RSS growth per session', goal: '≤ 100 KiB', measured: `${perSessionKiB.toFixed(1)} KiB`, met: perSessionKiB <= 100 },
      { name: 'idle sessions: heartbeat round answered', goal: `all ${count}`, measured: `${answered} of ${count}`, met: answered === count },
    );
    body = table([
      ['sessions', 'connected in s', 'RSS before MB', 'RSS after MB', 'KiB/session', 'heartbeats answered'],
      [count, connectSeconds.toFixed(1), fmt.mb(beforeMb), fmt.mb(afterMb), perSessionKiB.toFixed(1), answered],
    ]);
    json = { count, connectSeconds, beforeMb, afterMb, perSessionKiB, answered };
  }
  await Promise.all(agents.map((a) => a.child.stop()));
  return { name: 'idle-sessions', describe, text: `${body}\n${targetLines(targets)}`, targets, ratios: {}, json };
}

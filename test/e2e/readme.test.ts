// @test-pass sqlite
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePortRange, freePorts } from '../helpers/data-plane.js';
import { childEnv, CLI_ARGS_ANYWHERE, cleanupProcesses, makeTempDir, PROJECT_ROOT, startServer, tempDatabaseUrl, type ServerProcess } from '../helpers/server-process.js';

/**
 * README.md as a user meets it: every fenced `sh` block runs, in order, in one bash (variables and
 * background jobs carry over, `set -e`), in a directory of its own that stands for the burrow
 * checkout (`npx burrow` runs this burrow; ./data is the server's); a `js` block whose first line
 * names a file (`// agent.mjs…`), or a `yaml` block (`# policy.yaml`), is saved there for the
 * blocks after it to run. A block is left out only when an HTML comment just above it says
 * `<!-- readme-test: skip: <why> -->`; `<!-- readme-test: expect <text> [×N] -->` also requires
 * that text in the block's output (N times). The server is `burrow serve` started in that
 * directory with the README's defaults, except its ports: the default ports in the snippets are
 * replaced by free ones (and the snippets' local services' 3000 and 3443 too), so the test runs
 * beside others. Blocks without a language are output, and not run.
 */

after(cleanupProcesses);

interface Block {
  line: number;
  lang: string;
  text: string;
  skip?: string;
  expect?: { text: string; times: number };
}

/** The fenced blocks of a Markdown text, with the directive of the comment just above each. */
function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const block: Block = { line: start + 1, lang: open[1]!, text: body.join('\n') + '\n' };
    const directive = /^<!-- readme-test: (skip|expect)[: ](.*?) -->$/.exec(lines[start - 1] ?? '');
    if (directive?.[1] === 'skip') block.skip = directive[2]!.trim();
    if (directive?.[1] === 'expect') {
      const [, text, times] = /^(.*?)(?: ×(\d+))?$/.exec(directive[2]!.trim())!;
      block.expect = { text: text!, times: times ? Number(times) : 1 };
    }
    blocks.push(block);
  }
  return blocks;
}

/** The file a block is saved as (a js or yaml block whose first line names one), if any. */
function savedAs(block: Block): string | undefined {
  if (block.lang === 'js') return /^\/\/ ([\w.-]+\.mjs)\b/.exec(block.text)?.[1];
  if (block.lang === 'yaml') return /^# ([\w.-]+\.ya?ml)\s*$/m.exec(block.text.split('\n')[0]!)?.[1];
  return undefined;
}

describe('README.md', () => {
  const blocks = readmeBlocks(readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8'));

  it('every sh and js block is run or says why not', () => {
    for (const block of blocks) {
      if (block.skip !== undefined) {
        assert.ok(block.skip.length > 0, `README.md:${block.line}: a skip says why`);
        continue;
      }
      if (block.lang === 'js') assert.ok(savedAs(block), `README.md:${block.line}: a js block begins with // <name>.mjs, or is skipped with a reason`);
      assert.ok(['sh', 'js', 'yaml', ''].includes(block.lang), `README.md:${block.line}: a ${block.lang} block: run it as sh, or skip it`);
    }
    assert.ok(blocks.filter((b) => b.lang === 'sh' && b.skip === undefined).length >= 10, 'the README still has its snippets');
  });

  describe('its snippets, in order, against a real burrow serve', () => {
    let dir: string;
    let server: ServerProcess;
    let shell: Shell;
    let substitute: (text: string) => string;

    before(async () => {
      dir = makeTempDir('burrow-readme-');
      checkoutLike(dir);
      const [api, agent, http, tls, web, local] = (await freePorts(6)) as [number, number, number, number, number, number];
      const tcp = await freePortRange(4);
      const ports = new Map<string, number>([
        ['8080', api],
        ['4443', agent],
        ['8081', http],
        ['8443', tls],
        ['3000', web],
        ['3443', local],
        ...[0, 1, 2, 3].map((i): [string, number] => [String(20000 + i), tcp.first + i]),
      ]);
      substitute = (text) => text.replace(/\b(8080|4443|8081|8443|3000|3443|2000[0-3])\b/g, (port) => String(ports.get(port)));
      const env: Record<string, string | undefined> = {
        PORT: String(api),
        AGENT_PORT: String(agent),
        EDGE_HTTP_PORT: String(http),
        EDGE_TLS_PORT: String(tls),
        EDGE_TCP_PORTS: `${tcp.first}-${tcp.last}`,
        // SQLite: the default ./data/burrow.db in `dir`; PostgreSQL: a schema of TEST_DATABASE_URL's
        DATABASE_URL: process.env.TEST_DATABASE_URL ? tempDatabaseUrl() : undefined,
      };
      server = await startServer({ cwd: dir, bootstrapApiKey: null, env });
      const key = server.stderr.map((line) => /^ {4}(\S+_\S+)$/.exec(line)?.[1]).find(Boolean);
      assert.ok(key, `serve printed its first API key:\n${server.stderr.join('\n')}`);
      // TLS_DIR is the default ./data/tls: the first start's notice still names the CA by an absolute path
      assert.ok(server.stderr.some((line) => line.includes(`root_cas: ${join(realpathSync(dir), 'data/tls/ca.pem')}`)), server.stderr.join('\n'));
      // what the reader does by hand after the first start: export KEY=<the key printed>
      shell = new Shell(dir, childEnv({ ...env, KEY: key }));
    });

    after(() => shell?.kill());

    it('run as written', { timeout: 480_000 }, async () => {
      let ran = 0;
      for (const block of blocks) {
        if (block.skip !== undefined) continue;
        const where = `README.md:${block.line}`;
        const name = savedAs(block);
        if (name) {
          writeFileSync(join(dir, name), substitute(block.text));
          continue;
        }
        if (block.lang !== 'sh') continue;
        const result = await shell.run(substitute(block.text), `block-${block.line}`);
        assert.equal(result.failed, false, `${where} failed:\n${block.text}\n--- its output ---\n${result.output}`);
        if (block.expect) {
          const times = result.output.split(block.expect.text).length - 1;
          assert.ok(times >= block.expect.times, `${where}: expected ${JSON.stringify(block.expect.text)} ×${block.expect.times} in its output:\n${result.output}`);
        }
        ran++;
      }
      assert.ok(ran >= 10, `${ran} blocks ran`);
    });
  });
});

/**
 * `dir` as a burrow checkout looks to a user: `npx burrow` runs this burrow (a node_modules of
 * links to this project's packages, with a `burrow` of its own in .bin), and programs there import
 * `@ngrok/ngrok` and `@ngrok/ngrok-api`.
 */
function checkoutLike(dir: string): void {
  const modules = join(dir, 'node_modules');
  const bin = join(modules, '.bin');
  mkdirSync(bin, { recursive: true });
  for (const entry of readdirSync(join(PROJECT_ROOT, 'node_modules'))) {
    if (entry !== '.bin') symlinkSync(join(PROJECT_ROOT, 'node_modules', entry), join(modules, entry));
  }
  const quoted = [process.execPath, ...CLI_ARGS_ANYWHERE].map((arg) => `'${arg}'`).join(' ');
  writeFileSync(join(bin, 'burrow'), `#!/bin/sh\nexec ${quoted} "$@"\n`);
  chmodSync(join(bin, 'burrow'), 0o755);
}

/**
 * One bash for every block, as one terminal: each block is sourced from a file with its output
 * in another; `set -e` ends the shell at a block's first failing command, which fails the test.
 * Background jobs stay in the shell's process group, which `kill()` ends.
 */
class Shell {
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private pending = '';
  private readonly lines: string[] = [];
  private wake: (() => void) | undefined;

  constructor(
    private readonly dir: string,
    env: NodeJS.ProcessEnv,
  ) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'inherit'], detached: true });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.pending += chunk;
      for (let end = this.pending.indexOf('\n'); end >= 0; end = this.pending.indexOf('\n')) {
        this.lines.push(this.pending.slice(0, end));
        this.pending = this.pending.slice(end + 1);
      }
      this.wake?.();
    });
    this.child.stdin!.write('set -e\n');
    // the agents it started in the background run until killed: never leave them behind
    process.once('exit', () => this.kill());
  }

  private async nextLine(): Promise<string> {
    while (this.lines.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.lines.shift()!;
  }

  /** Sources `script`; resolves with its output (stdout and stderr) and whether the shell died of it. */
  async run(script: string, name: string, timeoutMs = 90_000): Promise<{ failed: boolean; output: string }> {
    const file = join(this.dir, `${name}.sh`);
    writeFileSync(file, script);
    const done = this.nextLine();
    this.child.stdin!.write(`source '${file}' > '${file}.out' 2>&1 < /dev/null; echo done\n`);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      done.then(() => 'done' as const),
      this.exited.then(() => 'exited' as const),
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs))),
    ]);
    clearTimeout(timer);
    const output = readFileSync(`${file}.out`, 'utf8');
    if (outcome === 'timeout') return { failed: true, output: `${output}\n(no end within ${timeoutMs} ms)` };
    return { failed: outcome === 'exited', output };
  }

  kill(): void {
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

// Runs the test files given, in the order given, `concurrency` at a time, through node:test's
// run(): unlike `node --test`, which sorts its file list, run() starts files in the order given,
// so run-tests.mjs can start the slowest first. Test files' processes inherit this process's
// --import flags (tsx, and on PostgreSQL the database-slot preload).
// Usage: node --import tsx scripts/run-files.mjs <concurrency> <name pattern or ''> <file>...
import { writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

const [concurrencyArg, pattern, ...files] = process.argv.slice(2);
const stream = run({
  files: files.map((file) => resolve(file)),
  concurrency: Number(concurrencyArg),
  // A file whose process never ends (a handle left open after a failure) is killed and fails
  // after 10 minutes, rather than holding the run until CI's own limit; the slowest takes ~2.5.
  timeout: 600_000,
  ...(pattern ? { testNamePatterns: [pattern] } : {}),
});

// Seconds each file took from start to end, written where BURROW_TEST_DURATIONS_OUT says.
const durations = {};
stream.on('test:fail', (data) => {
  if (data.todo === undefined) process.exitCode = 1;
});
stream.on('test:complete', (data) => {
  if (data.file && data.name === data.file) durations[relative(process.cwd(), data.file)] = Math.round(data.details.duration_ms / 100) / 10;
});
stream.on('end', () => {
  const out = process.env.BURROW_TEST_DURATIONS_OUT;
  if (out) writeFileSync(out, `${JSON.stringify(durations, null, 1)}\n`);
});
stream.compose(process.stdout.isTTY ? spec : tap).pipe(process.stdout);

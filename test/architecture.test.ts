import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Cruises `src/` under `baseDir` with the rules of .dependency-cruiser.mjs; returns one line per
 * offending import: `from → to (rule)`, with the whole circle for a cycle.
 */
async function violations(baseDir: string): Promise<string[]> {
  const options = await extractDepcruiseOptions(resolve(ROOT, '.dependency-cruiser.mjs'));
  const result = await cruise(['src'], {
    ...options,
    baseDir,
    tsConfig: { fileName: resolve(ROOT, 'tsconfig.json') },
  });
  const output = result.output as ICruiseResult;
  const unresolved = output.modules.flatMap((module) =>
    module.dependencies.filter((dependency) => dependency.couldNotResolve).map((dependency) => `${module.source} → ${dependency.module}`),
  );
  // An import the cruiser cannot follow would escape every rule.
  assert.deepEqual(unresolved, [], 'every import resolves');
  assert.ok(output.summary.totalCruised > 0, 'something was cruised');
  return output.summary.violations.map((violation) => {
    const cycle = violation.cycle?.map((step) => step.name).join(' → ');
    return `${violation.from} → ${violation.to} (${violation.rule.name})${cycle ? `: ${violation.from} → ${cycle}` : ''}`;
  });
}

/** `process.env`, `process['env']` and `{ env } = process`: every way to read the environment without an import. */
const READS_ENVIRONMENT = /\bprocess\s*(\?\.|\.)\s*env\b|\bprocess\s*\[\s*['"`]env['"`]\s*\]|\{[^}]*\benv\b[^}]*\}\s*=\s*(globalThis\.)?process\b/;

/**
 * `file:line` of every line under `baseDir`/src that reads the environment, but src/config.ts
 * (DEVELOPERS.md: CLI flags come in as loadConfig(overrides), never through the environment).
 * dependency-cruiser sees imports only; this sees the global `process`.
 */
function environmentReaders(baseDir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(baseDir, 'src'), { recursive: true, encoding: 'utf8' })) {
    const file = `src/${entry.split('\\').join('/')}`;
    if (!/\.(ts|mts|js|mjs)$/.test(file) || file === 'src/config.ts') continue;
    readFileSync(join(baseDir, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (READS_ENVIRONMENT.test(line)) found.push(`${file}:${index + 1}`);
      });
  }
  return found;
}

describe('the environment rule: only src/config.ts reads it', () => {
  it('holds for every file under src/', () => {
    assert.deepEqual(environmentReaders(ROOT), []);
  });

  it('names every line of a tree that breaks it (test/fixtures/architecture)', () => {
    assert.deepEqual(environmentReaders(resolve(ROOT, 'test/fixtures/architecture')), [
      'src/cli/environment.ts:4',
      'src/cli/environment.ts:5',
      'src/cli/environment.ts:6',
    ]);
  });
});

describe('the dependency rule (DEVELOPERS.md, .dependency-cruiser.mjs)', () => {
  it('holds for every import under src/', async () => {
    const found = await violations(ROOT);
    assert.deepEqual(found, [], `imports that break the dependency rule:\n  ${found.join('\n  ')}`);
  });

  it('names each offending import of a tree that breaks it (test/fixtures/architecture)', async () => {
    const found = await violations(resolve(ROOT, 'test/fixtures/architecture'));
    for (const expected of [
      'src/http/routes.ts → src/tunnels/listener.ts (http-and-tunnels-apart)',
      'src/http/routes.ts → src/app/build.ts (only-cli-imports-app)',
      'src/observability/metrics.ts → src/domain/rule.ts (observability-is-a-leaf)',
      'src/domain/rule.ts → src/storage/repository.ts (domain-stands-alone)',
      'src/storage/repository.ts → src/domain/rule.ts (storage-uses-domain-types-only)',
      'src/cli/environment.ts → process (only-config-reads-the-environment)',
    ]) {
      assert.ok(found.includes(expected), `expected ${expected} among:\n  ${found.join('\n  ')}`);
    }
    assert.ok(
      found.some((line) => line.includes('(no-circular)') && line.includes('src/domain/rule.ts') && line.includes('src/storage/repository.ts')),
      `expected the circle domain/rule.ts ↔ storage/repository.ts among:\n  ${found.join('\n  ')}`,
    );
  });
});

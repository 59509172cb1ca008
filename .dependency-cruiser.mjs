/**
 * The dependency rule of DEVELOPERS.md, checked by test/architecture.test.ts (run by `npm test`):
 *
 *   cli → app → (http | tunnels) → domain ← storage
 *
 * plus observability/ (logger, metrics instruments), which anyone may import and which imports
 * nothing of ours, and config.ts, the only reader of the environment. Paths are relative to the
 * directory cruised from (the repository root, or a fixture directory in the test).
 * `npx depcruise src` runs the same rules from the command line.
 */
const OURS = '^src/';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules never import each other in a circle, directly or through others.',
      severity: 'error',
      from: { path: OURS },
      to: { circular: true },
    },
    {
      name: 'only-cli-imports-app',
      comment: 'app/ is the composition root: only the CLI starts it.',
      severity: 'error',
      from: { path: OURS, pathNot: '^src/(cli|app)/' },
      to: { path: '^src/app/' },
    },
    {
      name: 'nothing-imports-cli',
      comment: 'The CLI is the outermost layer.',
      severity: 'error',
      from: { path: OURS, pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'cli-goes-through-app',
      comment: 'The CLI reaches HTTP, the data plane and the database only through app/.',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/(http|tunnels|storage)/' },
    },
    {
      name: 'http-and-tunnels-apart',
      comment: 'The control plane (http/) and the data plane (tunnels/) never import each other: what they share lives in domain/.',
      severity: 'error',
      from: { path: '^src/(http|tunnels)/' },
      to: { path: '^src/(http|tunnels)/', pathNot: '^src/$1/' },
    },
    {
      name: 'http-and-tunnels-not-storage',
      comment: 'http/ and tunnels/ use domain services and interfaces; app/ gives them the storage implementations.',
      severity: 'error',
      from: { path: '^src/(http|tunnels)/' },
      to: { path: '^src/storage/' },
    },
    {
      name: 'domain-stands-alone',
      comment: 'domain/ is rules only: no HTTP, no data plane, no SQL, no configuration, no logging.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/(cli|app|http|tunnels|storage|observability)/|^src/config\\.ts$' },
    },
    {
      name: 'storage-implements-domain',
      comment: 'storage/ implements the repository interfaces of domain/ and imports nothing else of ours.',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: OURS, pathNot: '^src/(storage|domain)/' },
    },
    {
      name: 'storage-uses-domain-types-only',
      comment: 'storage/ imports the types of domain/ (entities, repository interfaces), never its code.',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/domain/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'observability-is-a-leaf',
      comment: 'observability/ (logger, metrics instruments) imports nothing of ours; hooks that feed it live in http/pipeline/.',
      severity: 'error',
      from: { path: '^src/observability/' },
      to: { path: OURS, pathNot: '^src/observability/' },
    },
    {
      name: 'config-is-near-the-root',
      comment: 'config.ts reads the environment and may use domain/ checks, nothing above.',
      severity: 'error',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/(cli|app|http|tunnels|storage|observability)/' },
    },
    {
      name: 'only-config-reads-the-environment',
      comment: 'config.ts is the only reader of the environment: nothing else imports node:process (whose env it would read). test/architecture.test.ts also looks for process.env itself.',
      severity: 'error',
      from: { path: OURS, pathNot: '^src/config\\.ts$' },
      to: { path: '^(node:)?process$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // `import type` counts: a type-only import is still a dependency of the design.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js', '.mjs', '.json'],
      exportsFields: ['exports'],
      conditionNames: ['import', 'types', 'node', 'default'],
    },
  },
};

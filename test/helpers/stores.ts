/**
 * Which pass of `npm test` runs a whole file is said by its first line: `// @test-pass sqlite` for
 * a suite whose meaning does not depend on the store (unit tests with no store, a browser, ACME
 * against pebble, wire-level and HTTP-framing suites, the offline `policy test`, the README's
 * snippets), `// @test-pass postgres` for one that needs PostgreSQL (TEST_DATABASE_URL, or the
 * cluster suites, which bring their own schema and balance the two passes' times). scripts/run-tests.mjs leaves such a file out of the other pass. What the
 * store keeps (repositories, durability, the API's persistence, binds that write a policy) runs on
 * both.
 *
 * This is for a file of which only some tests are store-independent (the CLI's usage and start-up
 * errors, `agent-config`): the PostgreSQL pass skips those, saying why.
 */
export const onSqlitePassOnly: string | false = process.env.TEST_DATABASE_URL
  ? 'store-independent: runs on the SQLite pass only'
  : false;

/**
 * A heavy suite whose meaning does not depend on the store (a browser, ACME against pebble, the
 * classic agent's start-up race, the README's snippets, the agent port's wire-level bounds and
 * floods, public TCP limits, the offline `policy test`, `agent-config`) runs once per CI run: on the embedded
 * SQLite pass. The PostgreSQL pass (`TEST_DATABASE_URL`) skips it, saying why, which keeps that
 * pass (whose files run one at a time) within its time budget.
 */
export const onSqlitePassOnly: string | false = process.env.TEST_DATABASE_URL
  ? 'store-independent end-to-end suite: runs on the SQLite pass only'
  : false;

/**
 * A heavy suite whose meaning does not depend on the store (a browser, ACME against pebble, the
 * classic agent's start-up race, the README's snippets, the agent port's wire-level bounds and
 * floods, public TCP limits, the offline `policy test`, `agent-config`, HTTP framing on the public
 * port, PROXY headers, the CLI's usage and start-up errors) runs once per CI run: on the embedded
 * SQLite pass. The PostgreSQL pass (`TEST_DATABASE_URL`) skips it, saying why, which keeps that
 * pass within its time budget. What the store keeps (repositories, durability, the API's
 * persistence, binds that write a policy) runs on both.
 */
export const onSqlitePassOnly: string | false = process.env.TEST_DATABASE_URL
  ? 'store-independent end-to-end suite: runs on the SQLite pass only'
  : false;

/**
 * A heavy end-to-end suite whose meaning does not depend on the store (a browser, the classic
 * agent's start-up race, the README's snippets) runs once per CI run: on the embedded SQLite pass.
 * The PostgreSQL pass (`TEST_DATABASE_URL`) skips it, saying why.
 */
export const onSqlitePassOnly: string | false = process.env.TEST_DATABASE_URL
  ? 'store-independent end-to-end suite: runs on the SQLite pass only'
  : false;

// Preloaded (--import) into every test file's process on the PostgreSQL pass: claims a slot
// database (test-database-slots.mjs) with a session advisory lock on TEST_DATABASE_URL's
// database, held by a connection that lives as long as the process (the lock goes with it), and
// points TEST_DATABASE_URL at the slot, so everything the file starts uses that database.
import pg from 'pg';
import { slotNames } from './test-database-slots.mjs';

const count = Number(process.env.BURROW_TEST_DATABASE_SLOTS);
const base = process.env.TEST_DATABASE_URL;
// Only test files' processes: node:test marks them; the runner itself has nothing to claim.
if (process.env.NODE_TEST_CONTEXT && base && count > 0) {
  const client = new pg.Client({ connectionString: base });
  client.on('error', () => {}); // the lock is lost with the connection; nothing else depends on it
  await client.connect();
  const names = slotNames(base, count);
  const deadline = Date.now() + 120_000;
  let claimed;
  while (claimed === undefined) {
    for (let slot = 0; slot < count && claimed === undefined; slot++) {
      // 0x6275 ('bu'): a key class of its own, so the key cannot meet burrow's advisory locks
      const { rows } = await client.query('select pg_try_advisory_lock($1, $2) as locked', [0x6275, slot]);
      if (rows[0].locked) claimed = slot;
    }
    if (claimed !== undefined) break;
    // the file before this one has exited, but its connection may not have closed yet
    if (Date.now() > deadline) throw new Error(`no free test database slot of ${count} within 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  client.connection.stream.unref(); // held, not waited on: the process ends when its tests do
  const url = new URL(base);
  url.pathname = `/${encodeURIComponent(names[claimed])}`;
  process.env.TEST_DATABASE_URL = url.toString();
}

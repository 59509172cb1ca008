import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { openStore } from '../../src/storage/db.js';
import { migrateToLatest } from '../../src/storage/migrate.js';

const modeOf = (path: string) => statSync(path).mode & 0o777;

it("a new SQLite database and the directories made for it are the owner's alone; an existing directory keeps its mode", async () => {
  const root = mkdtempSync(join(tmpdir(), 'burrow-files-'));
  chmodSync(root, 0o755);
  const file = join(root, 'data', 'nested', 'burrow.db');
  const store = openStore(`sqlite:${file}`);
  try {
    await migrateToLatest(store); // writes: the WAL and shared-memory files appear
    assert.equal(modeOf(join(root, 'data')), 0o700);
    assert.equal(modeOf(join(root, 'data', 'nested')), 0o700);
    assert.equal(modeOf(file), 0o600);
    for (const companion of [`${file}-wal`, `${file}-shm`]) if (existsSync(companion)) assert.equal(modeOf(companion), 0o600, companion);
    assert.equal(modeOf(root), 0o755, 'not made here: left as it was');
  } finally {
    await store.close();
  }
});

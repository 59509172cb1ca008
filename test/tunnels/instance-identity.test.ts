// @test-pass sqlite
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { claimInstanceIdentity, INSTANCE_FILE } from '../../src/tunnels/instance-identity.js';

const dir = () => mkdtempSync(join(tmpdir(), 'burrow-instance-'));
const recorded = (tlsDir: string) => JSON.parse(readFileSync(join(tlsDir, INSTANCE_FILE), 'utf8')) as { id: string; pid: number; host: string; started?: number };
const previousRun = (tlsDir: string, fields: Partial<{ id: string; pid: number; host: string; started: number }> = {}) =>
  writeFileSync(join(tlsDir, INSTANCE_FILE), JSON.stringify({ id: 'inst_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', pid: 999_999, host: hostname(), ...fields }));

describe('an instance id kept in TLS_DIR across restarts', () => {
  it('a first start makes a new id and records itself (the directory made 0700)', async () => {
    const tlsDir = join(dir(), 'tls');
    const identity = await claimInstanceIdentity(tlsDir);
    assert.match(identity.id, /^inst_[0-9A-Za-z]{27}$/);
    assert.equal(identity.inherited, false);
    assert.deepEqual({ ...recorded(tlsDir), started: undefined }, { id: identity.id, pid: process.pid, host: hostname(), started: undefined });
    assert.ok(Math.abs(recorded(tlsDir).started! - (Date.now() - process.uptime() * 1000)) < 1_000);
    assert.equal(statSync(tlsDir).mode & 0o777, 0o700);
  });

  it("takes the id of a previous run on this machine whose process is gone, and records itself as its holder", async () => {
    const tlsDir = dir();
    previousRun(tlsDir);
    const identity = await claimInstanceIdentity(tlsDir, () => false);
    assert.deepEqual(identity, { id: 'inst_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', inherited: true });
    assert.equal(recorded(tlsDir).pid, process.pid);
  });

  it('never shares the id of a process still running, and leaves its record alone', async () => {
    const tlsDir = dir();
    previousRun(tlsDir);
    const identity = await claimInstanceIdentity(tlsDir, () => true);
    assert.equal(identity.inherited, false);
    assert.notEqual(identity.id, 'inst_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ');
    assert.equal(recorded(tlsDir).pid, 999_999);
    // nor its own: a second start in this process is a new instance
    const again = await claimInstanceIdentity(tlsDir, () => false);
    assert.equal((await claimInstanceIdentity(tlsDir, () => false)).inherited, false, 'this process holds it now');
    assert.equal(again.inherited, true);
  });

  it('a record with this process id but another start (a container restarted as PID 1) is a previous run', async () => {
    const tlsDir = dir();
    previousRun(tlsDir, { pid: process.pid, started: 1 });
    assert.deepEqual(await claimInstanceIdentity(tlsDir, () => true), { id: 'inst_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ', inherited: true });
  });

  it('a record from another machine, or one that is not ours to read, gives a new id', async () => {
    for (const write of [
      (tlsDir: string) => previousRun(tlsDir, { host: `not-${hostname()}` }),
      (tlsDir: string) => writeFileSync(join(tlsDir, INSTANCE_FILE), '{"id": "cr_1", "pid": 1, "host": "x"}'),
      (tlsDir: string) => writeFileSync(join(tlsDir, INSTANCE_FILE), 'not json'),
    ]) {
      const tlsDir = dir();
      write(tlsDir);
      const identity = await claimInstanceIdentity(tlsDir, () => false);
      assert.equal(identity.inherited, false);
      assert.deepEqual([recorded(tlsDir).id, recorded(tlsDir).pid], [identity.id, process.pid]);
    }
  });
});

describe('an instance record that cannot be written', () => {
  it('a record that cannot be read or written (here a directory in its place) still starts, with a new id not recorded', async () => {
    const tlsDir = dir();
    mkdirSync(join(tlsDir, INSTANCE_FILE));
    const identity = await claimInstanceIdentity(tlsDir, () => false);
    assert.equal(identity.inherited, false);
    assert.equal(identity.unrecorded, true);
    assert.match(identity.id, /^inst_/);
  });

  it('a record naming pid 0 or less is not read (kill(0) would ask about the process group)', async () => {
    const tlsDir = dir();
    previousRun(tlsDir, { pid: 0 });
    assert.equal((await claimInstanceIdentity(tlsDir, () => true)).inherited, false);
    assert.equal(recorded(tlsDir).pid, process.pid);
  });
});

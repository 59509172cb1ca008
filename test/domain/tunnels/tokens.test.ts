// @test-pass sqlite
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rememberedAsk } from '../../../src/domain/tunnels/binds.js';
import { readRebindToken, rebindToken, resumeProof } from '../../../src/domain/tunnels/tokens.js';

const HASH = 'a'.repeat(64);

test('a rebind Token proves its tunnel id and names its target', () => {
  const token = rebindToken(HASH, 'tn_1', { kind: 'hostname', hostname: 'app.example.com' });
  assert.deepEqual(readRebindToken(HASH, 'tn_1', token), { target: { kind: 'hostname', hostname: 'app.example.com' } });
  assert.deepEqual(readRebindToken(HASH, 'tn_1', rebindToken(HASH, 'tn_1', { kind: 'tcp', port: 20001 })), { target: { kind: 'tcp', port: 20001 } });
  // another tunnel id, another credential, a target swapped under the same proof: nothing proven
  assert.equal(readRebindToken(HASH, 'tn_2', token), undefined);
  assert.equal(readRebindToken('b'.repeat(64), 'tn_1', token), undefined);
  const swapped = `${token.slice(0, token.indexOf('.'))}.${Buffer.from('h:evil.example.com').toString('base64url')}`;
  assert.equal(readRebindToken(HASH, 'tn_1', swapped), undefined);
  assert.equal(readRebindToken(HASH, 'tn_1', ''), undefined);
  // a bare proof of the id (no target) still keeps the id
  assert.deepEqual(readRebindToken(HASH, 'tn_1', resumeProof(HASH, 'tn_1')), { target: undefined });
});

test('only a rebind that names no target asks for the remembered one, of its own kind', () => {
  const host = { kind: 'hostname', hostname: 'app.example.com' } as const;
  const port = { kind: 'tcp', port: 20001 } as const;
  assert.deepEqual(rememberedAsk({ proto: 'https' }, host, '127.0.0.1'), { proto: 'https', hostname: 'app.example.com' });
  assert.deepEqual(rememberedAsk({ proto: 'tcp', addr: '' }, port, '127.0.0.1'), { proto: 'tcp', addr: '127.0.0.1:20001' });
  assert.equal(rememberedAsk({ proto: 'https', subdomain: 'other' }, host, '127.0.0.1'), undefined);
  assert.equal(rememberedAsk({ proto: 'tcp' }, host, '127.0.0.1'), undefined);
  assert.equal(rememberedAsk({ proto: 'tls' }, port, '127.0.0.1'), undefined);
});

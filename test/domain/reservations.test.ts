// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressReservationRefusal, hostnameReservationRefusal, reservationQuery, type BindReservationSettings } from '../../src/domain/reservations/bind-rule.js';
import { coveringCandidates, covers, holderOf } from '../../src/domain/reservations/names.js';

/** The bind rule of CERTIFICATES.md §0, pure: who may bind a name or an address. */

const settings: BindReservationSettings = { requireReservedNames: false, edgeDomain: 'burrow.localhost', publicHost: '127.0.0.1', region: 'local' };
const required = { ...settings, requireReservedNames: true };
const A = 'acct_A';
const B = 'acct_B';

describe('reservation names', () => {
  it('a wildcard covers itself and names under it at any depth, not its base', () => {
    assert.ok(covers('*.example.com', 'a.example.com'));
    assert.ok(covers('*.example.com', 'a.b.example.com'));
    assert.ok(covers('*.example.com', '*.example.com'));
    assert.ok(covers('*.example.com', '*.a.example.com'));
    assert.ok(!covers('*.example.com', 'example.com'));
    assert.ok(!covers('*.example.com', 'badexample.com'));
    assert.ok(covers('a.example.com', 'a.example.com'));
    assert.ok(!covers('a.example.com', 'b.a.example.com'));
  });

  it('lists the reservations that could cover a name', () => {
    assert.deepEqual(coveringCandidates('a.b.example.com'), ['a.b.example.com', '*.b.example.com', '*.example.com']);
    assert.deepEqual(coveringCandidates('*.a.example.com'), ['*.a.example.com', '*.example.com']);
    assert.deepEqual(coveringCandidates('example.com'), ['example.com']);
    assert.deepEqual(reservationQuery('*.a.example.com').under, 'a.example.com');
    assert.equal(reservationQuery('a.example.com').under, undefined);
  });

  it('the most specific reservation holds a name', () => {
    const reservations = [
      { accountId: A, domain: '*.example.com' },
      { accountId: B, domain: '*.b.example.com' },
      { accountId: A, domain: 'x.b.example.com' },
    ];
    assert.equal(holderOf('y.b.example.com', reservations)?.accountId, B);
    assert.equal(holderOf('x.b.example.com', reservations)?.accountId, A);
    assert.equal(holderOf('c.example.com', reservations)?.accountId, A);
    assert.equal(holderOf('example.org', reservations), undefined);
  });
});

describe('the bind rule', () => {
  it("another account's name, or a name under its wildcard, is 320; the owner's is allowed", () => {
    const reservations = [{ accountId: A, domain: 'app.example.com' }, { accountId: A, domain: '*.wild.example.com' }];
    assert.equal(hostnameReservationRefusal('app.example.com', B, reservations, settings)?.code, 320);
    assert.equal(hostnameReservationRefusal('x.wild.example.com', B, reservations, settings)?.code, 320);
    assert.equal(hostnameReservationRefusal('app.example.com', A, reservations, settings), null);
    assert.equal(hostnameReservationRefusal('x.wild.example.com', A, reservations, required), null);
  });

  it("a wildcard bind covering another account's name is 320", () => {
    assert.equal(hostnameReservationRefusal('*.example.com', B, [{ accountId: A, domain: 'app.example.com' }], settings)?.code, 320);
    assert.equal(hostnameReservationRefusal('*.example.com', A, [{ accountId: A, domain: 'app.example.com' }], settings), null);
  });

  it('unreserved names are first-come, unless reservations are required for custom names (319)', () => {
    assert.equal(hostnameReservationRefusal('free.example.com', B, [], settings), null);
    const refusal = hostnameReservationRefusal('free.example.com', B, [], required);
    assert.equal(refusal?.code, 319);
    assert.match(refusal?.message ?? '', /free\.example\.com/);
    assert.equal(hostnameReservationRefusal('abc.burrow.localhost', B, [], required), null);
    assert.equal(hostnameReservationRefusal('burrow.localhost', B, [], required)?.code, 319);
  });

  it("another account's address is 309; unreserved fixed addresses need a reservation when required (307)", () => {
    assert.equal(addressReservationRefusal(20001, B, A, settings)?.code, 309);
    assert.match(addressReservationRefusal(20001, B, A, settings)?.message ?? '', /127\.0\.0\.1:20001/);
    assert.equal(addressReservationRefusal(20001, A, A, required), null);
    assert.equal(addressReservationRefusal(20001, B, undefined, settings), null);
    assert.equal(addressReservationRefusal(20001, B, undefined, required)?.code, 307);
  });
});

// @test-pass sqlite
// IP address and CIDR parsing and matching, and the CEL functions built on them.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cidrContains, inCidrRange, inCidrRanges, parseCidr, parseIp } from '../../../src/domain/policy/index.js';
import { explainInvalidCidr } from '../../../src/domain/policy/cidr.js';

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

describe('parseIp', () => {
  const valid: Array<[string, 4 | 6, string]> = [
    ['0.0.0.0', 4, '00000000'],
    ['255.255.255.255', 4, 'ffffffff'],
    ['10.1.2.3', 4, '0a010203'],
    ['::', 6, '0'.repeat(32)],
    ['::1', 6, `${'0'.repeat(31)}1`],
    ['1::', 6, `0001${'0'.repeat(28)}`],
    ['2001:db8::8a2e:370:7334', 6, '20010db8000000000000' + '8a2e03707334'],
    ['2001:DB8:0:0:0:0:0:1', 6, '20010db8000000000000000000000001'],
    ['1:2:3:4:5:6:7::', 6, '00010002000300040005000600070000'],
    ['::1:2:3:4:5:6:7', 6, '00000001000200030004000500060007'],
    ['::ffff:192.0.2.1', 6, '00000000000000000000ffffc0000201'],
    ['64:ff9b::10.0.0.1', 6, '0064ff9b0000000000000000' + '0a000001'],
  ];
  for (const [text, version, bytes] of valid) {
    test(`accepts ${text}`, () => {
      const ip = parseIp(text);
      assert.ok(ip);
      assert.equal(ip.version, version);
      assert.equal(hex(ip.bytes), bytes);
    });
  }

  const invalid = [
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.0.0.1',
    '01.2.3.4',
    '1.2.3.-4',
    ' 1.2.3.4',
    '1.2.3.4 ',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8::',
    '1::2::3',
    ':::',
    ':1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:',
    '12345::',
    'g::',
    '::1.2.3.4:1',
    '1.2.3.4::',
    'fe80::1%eth0',
    '[::1]',
    'localhost',
  ];
  for (const text of invalid) test(`rejects ${JSON.stringify(text)}`, () => assert.equal(parseIp(text), null));
});

describe('parseCidr', () => {
  for (const text of ['10.0.0.0/8', '10.0.0.1/8', '0.0.0.0/0', '1.2.3.4/32', '::/0', '2001:db8::/32', '::ffff:0:0/96', 'fe80::1/128']) {
    test(`accepts ${text}`, () => assert.ok(parseCidr(text)));
  }
  for (const text of ['10.0.0.0', '10.0.0.0/', '10.0.0.0/33', '10.0.0.0/08', '10.0.0.0/-1', '10.0.0.0/8/8', '/8', '::/129', '::/0128', '10.0.0.0 /8', 'x/8']) {
    test(`rejects ${JSON.stringify(text)} and explains why`, () => {
      assert.equal(parseCidr(text), null);
      assert.ok(explainInvalidCidr(text).length > 10);
    });
  }
  test('keeps the prefix length', () => assert.equal(parseCidr('2001:db8::/48')?.prefix, 48));
});

describe('cidrContains', () => {
  const cases: Array<[string, string, boolean]> = [
    ['10.0.0.0/8', '10.255.1.2', true],
    ['10.0.0.0/8', '11.0.0.0', false],
    ['10.1.2.3/8', '10.9.9.9', true], // host bits in the CIDR are ignored
    ['192.168.1.0/25', '192.168.1.127', true],
    ['192.168.1.0/25', '192.168.1.128', false],
    ['1.2.3.4/32', '1.2.3.4', true],
    ['1.2.3.4/32', '1.2.3.5', false],
    ['0.0.0.0/0', '203.0.113.9', true],
    ['2001:db8::/32', '2001:db8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['2001:db8::/33', '2001:db8:7fff::1', true],
    ['2001:db8::/33', '2001:db8:8000::1', false],
    ['::/0', '::1', true],
    ['::/0', '10.0.0.1', false], // an IPv4 address never matches an IPv6 range
    ['10.0.0.0/8', '::ffff:10.1.2.3', true], // IPv4-mapped IPv6 matches IPv4 ranges
    ['10.0.0.0/8', '::ffff:11.1.2.3', false],
    ['::ffff:0:0/96', '::ffff:10.1.2.3', true],
    ['10.0.0.0/8', '2001:db8::1', false],
  ];
  for (const [cidr, ip, expected] of cases) {
    test(`${ip} in ${cidr} is ${expected}`, () => {
      const range = parseCidr(cidr);
      const address = parseIp(ip);
      assert.ok(range && address);
      assert.equal(cidrContains(range, address), expected);
    });
  }
});

describe('inCidrRange / inCidrRanges as plain functions', () => {
  test('match, no match, and invalid input are booleans, never errors', () => {
    assert.equal(inCidrRange('10.1.2.3', '10.0.0.0/8'), true);
    assert.equal(inCidrRange('10.1.2.3', '192.168.0.0/16'), false);
    assert.equal(inCidrRange('10.1.2.3', 'not a cidr'), false);
    assert.equal(inCidrRange('not an ip', '10.0.0.0/8'), false);
    assert.equal(inCidrRange(undefined, null), false);
    assert.equal(inCidrRanges('10.1.2.3', ['bad', '10.0.0.0/8']), true);
    assert.equal(inCidrRanges('10.1.2.3', ['bad', 7, null]), false);
    assert.equal(inCidrRanges('10.1.2.3', []), false);
    assert.equal(inCidrRanges('10.1.2.3', '10.0.0.0/8'), false);
    assert.equal(inCidrRanges('2001:db8::1', ['10.0.0.0/8', '2001:db8::/32']), true);
  });
});

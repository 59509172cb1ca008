// @test-pass sqlite
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatAddress, plainIp, proxyProtocolHeader } from '../../../src/tunnels/public/proxy-proto.js';

const SIGNATURE = '0d0a0d0a000d0a515549540a';

test('v1: TCP4, TCP6, v4-mapped addresses, UNKNOWN for mixed families', () => {
  assert.equal(proxyProtocolHeader(1, { ip: '203.0.113.7', port: 51000 }, { ip: '10.0.0.1', port: 20001 }).toString(), 'PROXY TCP4 203.0.113.7 10.0.0.1 51000 20001\r\n');
  assert.equal(proxyProtocolHeader(1, { ip: '::ffff:203.0.113.7', port: 1 }, { ip: '::ffff:127.0.0.1', port: 2 }).toString(), 'PROXY TCP4 203.0.113.7 127.0.0.1 1 2\r\n');
  assert.equal(proxyProtocolHeader(1, { ip: '2001:db8::1', port: 1 }, { ip: '::1', port: 2 }).toString(), 'PROXY TCP6 2001:db8::1 ::1 1 2\r\n');
  // A v4 client on a listener bound to :: is named with the v4 any address.
  assert.equal(proxyProtocolHeader(1, { ip: '192.0.2.1', port: 1 }, { ip: '::', port: 2 }).toString(), 'PROXY TCP4 192.0.2.1 0.0.0.0 1 2\r\n');
  assert.equal(proxyProtocolHeader(1, { ip: '', port: 0 }, { ip: '10.0.0.1', port: 2 }).toString(), 'PROXY UNKNOWN\r\n');
});

test('v2: signature, PROXY command, TCP over IPv4 / IPv6, addresses and ports in network order', () => {
  const v4 = proxyProtocolHeader(2, { ip: '203.0.113.7', port: 51000 }, { ip: '10.0.0.1', port: 20001 });
  assert.equal(v4.toString('hex'), `${SIGNATURE}2111000c` + 'cb007107' + '0a000001' + 'c738' + '4e21');
  const v6 = proxyProtocolHeader(2, { ip: '2001:db8::1', port: 443 }, { ip: '::ffff:10.0.0.1', port: 80 });
  assert.equal(v6.subarray(12, 16).toString('hex'), '21210024');
  assert.equal(v6.subarray(16, 32).toString('hex'), '20010db8000000000000000000000001');
  assert.equal(v6.subarray(32, 48).toString('hex'), '00000000000000000000ffff0a000001');
  assert.equal(v6.readUInt16BE(48), 443);
  assert.equal(v6.readUInt16BE(50), 80);
  assert.equal(v6.length, 52);
  const unknown = proxyProtocolHeader(2, { ip: 'garbage', port: 0 }, { ip: '10.0.0.1', port: 2 });
  assert.equal(unknown.toString('hex'), `${SIGNATURE}21000000`);
});

test('addresses as the proxy header names them', () => {
  assert.equal(plainIp('::ffff:127.0.0.1'), '127.0.0.1');
  assert.equal(plainIp('::1'), '::1');
  assert.equal(formatAddress({ ip: '::ffff:127.0.0.1', port: 5 }), '127.0.0.1:5');
  assert.equal(formatAddress({ ip: '2001:db8::1', port: 5 }), '[2001:db8::1]:5');
});

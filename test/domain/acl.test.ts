import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACL_MAX_RULES,
  ACL_RULE_MAX_BYTES,
  aclPermitsBind,
  parseAclRule,
  validateAcl,
  type AclTarget,
} from '../../src/domain/acl.js';

// Builders for long but valid pieces, so the length edges are exact.
const label = (n: number, ch = 'a'): string => ch.repeat(n);
/** A valid domain of exactly `n` characters (n >= 3), made of 63-character labels and a tail. */
function domainOf(n: number): string {
  const parts: string[] = [];
  let left = n;
  while (left > 64 + 1) {
    parts.push(label(63, 'b'));
    left -= 64;
  }
  // `left` is now 3..65: split it into two labels joined by a dot.
  const first = Math.min(63, left - 2);
  parts.push(label(first, 'c'), label(left - first - 1, 'd'));
  const d = parts.join('.');
  assert.equal(d.length, n);
  return d;
}

function expectValid(rule: string, target?: AclTarget): void {
  const check = parseAclRule(rule);
  assert.ok(check.ok, `expected ${JSON.stringify(rule.slice(0, 80))} to be valid, got: ${check.ok ? '' : check.reason}`);
  if (target) assert.deepEqual(check.target, target);
  assert.deepEqual(validateAcl([rule]), { ok: true });
}

function expectInvalid(rule: string, reason?: RegExp): void {
  const check = parseAclRule(rule);
  assert.equal(check.ok, false, `expected ${JSON.stringify(rule.slice(0, 80))} to be invalid`);
  if (!check.ok) {
    assert.match(check.reason, /^[A-Z"].*[.]$/s, 'a reason is a full sentence');
    if (reason) assert.match(check.reason, reason);
  }
  const list = validateAcl([rule]);
  assert.equal(list.ok, false);
  if (!list.ok) {
    assert.equal(list.index, 0);
    assert.match(list.message, /^ACL rule 1, /);
  }
}

describe('constants', () => {
  it('match SPEC 5.3', () => {
    assert.equal(ACL_MAX_RULES, 100);
    assert.equal(ACL_RULE_MAX_BYTES, 255);
  });
});

describe('parseAclRule: SPEC 5.3 valid examples', () => {
  const cases: Array<[string, AclTarget]> = [
    ['*', { kind: 'any' }],
    ['bind:*', { kind: 'any' }],
    ['bind:app.example.com', { kind: 'domain', domain: 'app.example.com', wildcard: false }],
    ['bind:*.example.com', { kind: 'domain', domain: 'example.com', wildcard: true }],
    ['bind:1.tcp.example.net:20002', { kind: 'address', host: '1.tcp.example.net', port: 20002 }],
    ['bind:10.0.0.7:8443', { kind: 'address', host: '10.0.0.7', port: 8443 }],
    ['bind:env=prod', { kind: 'label', key: 'env', value: 'prod' }],
    ['bind:app=*', { kind: 'label', key: 'app', value: '*' }],
    ['bind:*=edge', { kind: 'label', key: '*', value: 'edge' }],
  ];
  for (const [rule, target] of cases) it(rule, () => expectValid(rule, target));
});

describe('parseAclRule: SPEC 5.3 invalid examples', () => {
  const cases: Array<[string, RegExp]> = [
    ['bind:', /empty/],
    ['bind:*.*.example.com', /only one leading "\*\."/],
    ['bind:example.com:0', /port/],
    ['bind:example.com:080', /leading zeros/],
    ['bind:-bad.example.com', /must not start or end with "-"/],
    ['connect:example.com', /"connect" is not supported/],
    ['bind: x.com', /whitespace/],
    ['bind:*=*', /"bind:\*"/],
    ['256.1.1.1:80', /must be "\*" or start with "bind:"/],
    ['bind:256.1.1.1:80', /0 to 255/],
    ['bind:01.2.3.4:80', /leading zeros/],
    ['bind:*.1.2.3.4', /domain names only/],
  ];
  for (const [rule, reason] of cases) it(JSON.stringify(rule), () => expectInvalid(rule, reason));
});

describe('parseAclRule: domains', () => {
  const valid: Array<[string, string]> = [
    ['two labels', 'bind:example.com'],
    ['many labels', 'bind:a.b.c.d.e.example.com'],
    ['digits and hyphens inside labels', 'bind:a-1.b2-c.example.com'],
    ['one-character labels', 'bind:a.b'],
    ['upper case kept as given', 'bind:App.Example.COM'],
    ['an all-digit label next to a name', 'bind:123.example.com'],
    ['an all-digit label with a hyphen makes it a name', 'bind:1-2.3.4.5'],
    ['a numeric TLD after a name label (grammar allows it)', 'bind:example.123'],
    ['label of 63 characters', `bind:${label(63)}.example.com`],
    ['xn-- punycode labels', 'bind:xn--bcher-kva.example'],
  ];
  for (const [name, rule] of valid) it(`valid: ${name}`, () => expectValid(rule));

  it('keeps the domain as given in the target', () => {
    expectValid('bind:App.Example.COM', { kind: 'domain', domain: 'App.Example.COM', wildcard: false });
  });

  const invalid: Array<[string, string, RegExp?]> = [
    ['single label (two-label minimum)', 'bind:localhost', /at least two/],
    ['single label with a port (address host is domain | ipv4)', 'bind:localhost:80', /at least two/],
    ['label of 64 characters', `bind:${label(64)}.example.com`, /64 characters long; a label may have at most 63/],
    ['label starting with "-"', 'bind:-a.example.com', /"-"/],
    ['label ending with "-"', 'bind:a-.example.com', /"-"/],
    ['last label ending with "-"', 'bind:example.com-', /"-"/],
    ['underscore in a domain label', 'bind:my_app.example.com', /only letters, digits and "-"/],
    ['leading dot', 'bind:.example.com', /empty label/],
    ['trailing dot', 'bind:example.com.', /empty label/],
    ['double dot', 'bind:a..example.com', /empty label/],
    ['a single dot', 'bind:.', /empty label/],
    ['dots only', 'bind:...', /empty label/],
    ['slash', 'bind:example.com/path', /only letters, digits and "-"/],
    ['a star inside', 'bind:a.*.example.com', /"\*" may appear only/],
    ['a star glued to a label', 'bind:*example.com', /"\*" may appear only/],
    ['trailing star', 'bind:example.*', /"\*" may appear only/],
    ['a URL', 'bind:https://example.com', /"https" has a single label/],
    ['an email-like target', 'bind:user@example.com', /only letters, digits and "-"/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));

  it('a domain of 253 characters is valid, 254 is not (grammar only)', () => {
    const ok = parseAclRule(`bind:${domainOf(253)}`);
    assert.ok(ok.ok);
    const tooLong = parseAclRule(`bind:${domainOf(254)}`);
    assert.equal(tooLong.ok, false);
    if (!tooLong.ok) assert.match(tooLong.reason, /254 characters long; a domain may have at most 253/);
  });

  it('the 253 limit applies to the domain after "*.", not to the "*." itself', () => {
    assert.ok(parseAclRule(`bind:*.${domainOf(253)}`).ok);
    assert.equal(parseAclRule(`bind:*.${domainOf(254)}`).ok, false);
  });

  it('through validateAcl the byte limit comes first: a 253-character domain makes a 258-byte rule', () => {
    const result = validateAcl([`bind:${domainOf(253)}`]);
    assert.equal(result.ok, false);
    if (!result.ok) assert.match(result.message, /258 bytes long/);
  });
});

describe('parseAclRule: bare IPv4 and all-numeric hosts', () => {
  // Decision: the grammar admits an all-numeric dotted name as a domain, and SPEC 5.3 holds any
  // host of only digits and dots to the IPv4 rule. So a valid IPv4 without port is a valid target.
  it('valid: a bare IPv4 without port', () => {
    assert.deepEqual(parseAclRule('bind:1.2.3.4'), { ok: true, target: { kind: 'domain', domain: '1.2.3.4', wildcard: false } });
    assert.deepEqual(parseAclRule('bind:127.0.0.1'), { ok: true, target: { kind: 'domain', domain: '127.0.0.1', wildcard: false } });
  });
  const invalid: Array<[string, string, RegExp]> = [
    ['an all-digit two-label name', 'bind:123.456', /exactly four octets/],
    ['an IPv4 with an octet over 255', 'bind:256.1.1.1', /0 to 255/],
    ['an IPv4 with a leading zero', 'bind:01.2.3.4', /leading zeros/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));
});

describe('parseAclRule: addresses', () => {
  const valid: Array<[string, string, AclTarget]> = [
    ['port 1', 'bind:example.com:1', { kind: 'address', host: 'example.com', port: 1 }],
    ['port 65535', 'bind:example.com:65535', { kind: 'address', host: 'example.com', port: 65535 }],
    ['port 10', 'bind:example.com:10', { kind: 'address', host: 'example.com', port: 10 }],
    ['IPv4 octets 255', 'bind:255.255.255.255:80', { kind: 'address', host: '255.255.255.255', port: 80 }],
    ['IPv4 octets 0', 'bind:0.0.0.0:80', { kind: 'address', host: '0.0.0.0', port: 80 }],
    ['IPv4 octets with a single 0', 'bind:10.0.100.0:443', { kind: 'address', host: '10.0.100.0', port: 443 }],
    ['mixed-case host kept as given', 'bind:TCP.Example.net:20002', { kind: 'address', host: 'TCP.Example.net', port: 20002 }],
  ];
  for (const [name, rule, target] of valid) it(`valid: ${name}`, () => expectValid(rule, target));

  const invalid: Array<[string, string, RegExp]> = [
    ['port 0', 'bind:example.com:0', /1 to 65535/],
    ['port 00', 'bind:example.com:00', /leading zeros/],
    ['port with a leading zero', 'bind:example.com:0443', /leading zeros/],
    ['port 65536', 'bind:example.com:65536', /1 to 65535/],
    ['port 99999', 'bind:example.com:99999', /1 to 65535/],
    ['port of six digits', 'bind:example.com:100000', /1 to 65535/],
    ['a very long port', `bind:example.com:1${'0'.repeat(40)}`, /1 to 65535/],
    ['non-numeric port', 'bind:example.com:http', /port/],
    ['port with a sign', 'bind:example.com:+80', /port/],
    ['negative port', 'bind:example.com:-1', /port/],
    ['hex port', 'bind:example.com:0x50', /port/],
    ['fractional port', 'bind:example.com:80.0', /port/],
    ['empty port', 'bind:example.com:', /port/],
    ['port with a star', 'bind:example.com:*', /port/],
    ['empty host', 'bind::80', /no host/],
    ['two colons', 'bind:example.com:80:81', /single ":"/],
    ['IPv6', 'bind:[::1]:80', /IPv6/],
    ['IPv4 octet 256', 'bind:1.2.3.256:80', /0 to 255/],
    ['IPv4 octet 999', 'bind:999.1.1.1:80', /0 to 255/],
    ['IPv4 octet 1000', 'bind:1000.1.1.1:80', /0 to 255/],
    ['IPv4 leading zero', 'bind:10.0.0.07:80', /leading zeros/],
    ['IPv4 octet 00', 'bind:10.00.0.7:80', /leading zeros/],
    ['IPv4 of three octets', 'bind:1.2.3:80', /exactly four octets/],
    ['IPv4 of five octets', 'bind:1.2.3.4.5:80', /exactly four octets/],
    ['IPv4 with an empty octet', 'bind:1..3.4:80', /empty octet/],
    ['IPv4 with a trailing dot', 'bind:1.2.3.4.:80', /exactly four octets|empty octet/],
    ['an all-digit single label', 'bind:12345:80', /exactly four octets/],
    ['a wildcard host', 'bind:*:80', /cannot hold a "\*"/],
    ['a wildcard domain with a port', 'bind:*.example.com:443', /cannot have a port/],
    ['a star inside the host', 'bind:a.*.example.com:443', /cannot hold a "\*"/],
    ['a one-label host', 'bind:localhost:8080', /at least two/],
    ['a bad domain host', 'bind:-x.example.com:80', /"-"/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));
});

describe('parseAclRule: wildcard domains', () => {
  const valid: Array<[string, string]> = [
    ['*.example.com', 'bind:*.example.com'],
    ['*.a.b.example.com', 'bind:*.a.b.example.com'],
    ['*.a.b', 'bind:*.a.b'],
  ];
  for (const [name, rule] of valid) it(`valid: ${name}`, () => expectValid(rule));

  const invalid: Array<[string, string, RegExp]> = [
    ['*.com (the domain after "*." needs two labels)', 'bind:*.com', /at least two labels/],
    ['*. alone', 'bind:*.', /at least two labels/],
    ['two wildcards', 'bind:*.*.example.com', /only one leading/],
    ['a wildcard in the middle', 'bind:*.a.*.example.com', /"\*" may appear only/],
    ['a trailing wildcard', 'bind:*.example.*', /"\*" may appear only/],
    ['a wildcard over an IPv4', 'bind:*.1.2.3.4', /domain names only/],
    ['a wildcard over digits and dots', 'bind:*.10.0', /domain names only/],
    ['a wildcard with a port', 'bind:*.example.com:443', /cannot have a port/],
    ['a wildcard over a bad label', 'bind:*.-x.example.com', /"-"/],
    ['a wildcard over a trailing dot', 'bind:*.example.com.', /empty label/],
    ['"**"', 'bind:**', /"\*" may appear only/],
    ['"*." then a dot', 'bind:*..example.com', /empty label/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));
});

describe('parseAclRule: labels', () => {
  const valid: Array<[string, string, AclTarget]> = [
    ['underscore, dot and hyphen', 'bind:my_key.v-1=some_value.v-2', { kind: 'label', key: 'my_key.v-1', value: 'some_value.v-2' }],
    ['punctuation only', 'bind:_=-', { kind: 'label', key: '_', value: '-' }],
    ['dots only', 'bind:.=..', { kind: 'label', key: '.', value: '..' }],
    ['leading hyphen is fine in labels', 'bind:-k=-v', { kind: 'label', key: '-k', value: '-v' }],
    ['digits', 'bind:1=2', { kind: 'label', key: '1', value: '2' }],
    ['case kept', 'bind:Env=Prod', { kind: 'label', key: 'Env', value: 'Prod' }],
    ['key of 63', `bind:${label(63)}=v`, { kind: 'label', key: label(63), value: 'v' }],
    ['value of 63', `bind:k=${label(63)}`, { kind: 'label', key: 'k', value: label(63) }],
    ['key and value of 63', `bind:${label(63)}=${label(63)}`, { kind: 'label', key: label(63), value: label(63) }],
    ['wildcard key', 'bind:*=x', { kind: 'label', key: '*', value: 'x' }],
    ['wildcard value', 'bind:x=*', { kind: 'label', key: 'x', value: '*' }],
  ];
  for (const [name, rule, target] of valid) it(`valid: ${name}`, () => expectValid(rule, target));

  const invalid: Array<[string, string, RegExp]> = [
    ['both wildcards', 'bind:*=*', /not allowed/],
    ['empty key', 'bind:=prod', /key is empty/],
    ['empty value', 'bind:env=', /value is empty/],
    ['only "="', 'bind:=', /key is empty/],
    ['wildcard key, empty value', 'bind:*=', /value is empty/],
    ['empty key, wildcard value', 'bind:=*', /key is empty/],
    ['"=" twice', 'bind:a=b=c', /only once/],
    ['"==" ', 'bind:a==b', /only once/],
    ['key of 64', `bind:${label(64)}=v`, /64 characters long/],
    ['value of 64', `bind:k=${label(64)}`, /64 characters long/],
    ['colon in the value', 'bind:k=a:b', /only letters, digits, "_", "." and "-"/],
    ['slash in the key', 'bind:a/b=c', /only letters, digits/],
    ['star inside a key', 'bind:a*=b', /only letters, digits/],
    ['star inside a value', 'bind:a=b*', /only letters, digits/],
    ['"**" as key', 'bind:**=b', /only letters, digits/],
    ['a wildcard domain as key', 'bind:*.example.com=x', /only letters, digits/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));
});

describe('parseAclRule: rule kinds and literals', () => {
  const invalid: Array<[string, string, RegExp]> = [
    ['empty rule', '', /empty/],
    ['upper-case BIND:', 'BIND:example.com', /lower case/],
    ['capitalized Bind:', 'Bind:example.com', /lower case/],
    ['BIND:*', 'BIND:*', /lower case/],
    ['connect:', 'connect:example.com', /"connect" is not supported/],
    ['connect:*', 'connect:*', /not supported/],
    ['no kind, just a domain', 'example.com', /must be "\*" or start with "bind:"/],
    ['"bind" without colon', 'bind', /must be "\*" or start with "bind:"/],
    ['"bind=" instead of "bind:"', 'bind=example.com', /must be "\*" or start with "bind:"/],
    ['"**"', '**', /must be "\*" or start with "bind:"/],
    ['"*" with a target', '*:example.com', /must be "\*" or start with "bind:"/],
    ['double prefix', 'bind:bind:example.com', /no host|at least two|only letters|single/],
    ['a leading colon', ':example.com', /must be "\*" or start with "bind:"/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));
});

describe('parseAclRule: whitespace, control and non-ASCII characters', () => {
  const invalid: Array<[string, string, RegExp]> = [
    ['space after bind:', 'bind: x.com', /a space at character 6; rules must not contain whitespace/],
    ['leading space', ' bind:example.com', /space at character 1/],
    ['trailing space', 'bind:example.com ', /whitespace/],
    ['space alone', ' ', /whitespace/],
    ['space around "*"', ' * ', /whitespace/],
    ['tab', 'bind:\texample.com', /a tab .*whitespace/],
    ['newline', 'bind:example.com\n', /line break/],
    ['CRLF', 'bind:example.com\r\n', /line break/],
    ['vertical tab', 'bind:example\u000b.com', /whitespace/],
    ['form feed', 'bind:example\f.com', /whitespace/],
    ['space in a label', 'bind:env = prod', /whitespace/],
    ['NUL', 'bind:example.com\u0000', /control character/],
    ['DEL', 'bind:example.com\u007f', /control character/],
    ['escape', 'bind:\u001bexample.com', /control character/],
    ['non-breaking space', 'bind:\u00a0example.com', /non-ASCII/],
    ['ideographic space', 'bind:example.com\u3000', /non-ASCII/],
    ['zero-width space', 'bind:exa\u200bmple.com', /non-ASCII/],
    ['line separator', 'bind:example.com\u2028', /non-ASCII/],
    ['BOM', '\ufeffbind:example.com', /non-ASCII/],
    ['umlaut domain', 'bind:bücher.example', /non-ASCII character "ü" at character 7/],
    ['fullwidth colon', 'bind\uff1aexample.com', /non-ASCII/],
    ['Cyrillic a in bind', 'bind:ex\u0430mple.com', /non-ASCII/],
    ['emoji label', 'bind:env=\u{1f680}', /non-ASCII character "\u{1f680}"/u],
    ['lone surrogate', 'bind:env=\ud800', /non-ASCII/],
  ];
  for (const [name, rule, reason] of invalid) it(`invalid: ${name}`, () => expectInvalid(rule, reason));
});

describe('validateAcl: byte limit', () => {
  it('a valid rule of exactly 255 bytes is accepted', () => {
    const rule = `bind:${domainOf(250)}`;
    assert.equal(Buffer.byteLength(rule), 255);
    assert.deepEqual(validateAcl([rule]), { ok: true });
  });

  it('a grammar-valid rule of 256 bytes is rejected for its size', () => {
    const rule = `bind:${domainOf(251)}`;
    assert.equal(Buffer.byteLength(rule), 256);
    assert.ok(parseAclRule(rule).ok, 'the grammar alone accepts it');
    const result = validateAcl([rule]);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.index, 0);
      assert.match(result.message, /^ACL rule 1, ".*", is 256 bytes long; shorten it to at most 255 bytes of UTF-8\.$/);
    }
  });

  it('a 255-byte address rule is accepted and a 256-byte one rejected', () => {
    const ok = `bind:${domainOf(244)}:65535`;
    assert.equal(ok.length, 255);
    assert.deepEqual(validateAcl([ok]), { ok: true });
    const tooLong = `bind:${domainOf(245)}:65535`;
    assert.equal(validateAcl([tooLong]).ok, false);
  });

  it('counts bytes, not characters: 131 characters of which 126 are "é" are 257 bytes', () => {
    const rule = `bind:${'é'.repeat(126)}`;
    assert.equal(rule.length, 131);
    const result = validateAcl([rule]);
    assert.equal(result.ok, false);
    if (!result.ok) assert.match(result.message, /is 257 bytes long/);
  });

  it('a multi-byte rule within 255 bytes is judged by the grammar instead', () => {
    const rule = `bind:${'é'.repeat(125)}`; // 255 bytes
    assert.equal(Buffer.byteLength(rule), 255);
    const result = validateAcl([rule]);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.doesNotMatch(result.message, /bytes long/);
      assert.match(result.message, /non-ASCII/);
    }
  });

  it('counts a 4-byte character as 4 bytes', () => {
    const at255 = `bind:${'a'.repeat(246)}\u{1f680}`; // 5 + 246 + 4 = 255
    assert.equal(Buffer.byteLength(at255), 255);
    const r1 = validateAcl([at255]);
    assert.ok(!r1.ok && !/bytes long/.test(r1.message));
    const at256 = `bind:${'a'.repeat(247)}\u{1f680}`;
    const r2 = validateAcl([at256]);
    assert.ok(!r2.ok && /256 bytes long/.test(r2.message));
  });

  it('a huge rule is rejected for its size with a truncated quote', () => {
    const rule = `bind:${'a'.repeat(1_000_000)}.com`;
    const result = validateAcl([rule]);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.ok(result.message.length < 300, 'the message does not echo the whole value');
      assert.match(result.message, /"bind:a{59}…"/);
    }
  });
});

describe('validateAcl: count limit', () => {
  const rules = (n: number): string[] => Array.from({ length: n }, (_, i) => `bind:host${i}.example.com`);

  it('accepts the empty list', () => assert.deepEqual(validateAcl([]), { ok: true }));

  it(`accepts ${ACL_MAX_RULES} rules`, () => assert.deepEqual(validateAcl(rules(100)), { ok: true }));

  it('rejects 101 rules with a message about the limit', () => {
    const result = validateAcl(rules(101));
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.index, 100);
      assert.equal(result.message, 'An ACL may hold at most 100 rules, but 101 were given; remove 1 rule.');
    }
  });

  it('checks the count before any rule: 101 invalid rules still get the count message', () => {
    const result = validateAcl(Array.from({ length: 101 }, () => 'nope'));
    assert.ok(!result.ok && /at most 100 rules/.test(result.message));
  });

  it('pluralizes the excess', () => {
    const result = validateAcl(rules(150));
    assert.ok(!result.ok && /150 were given; remove 50 rules\./.test(result.message));
  });

  it('accepts duplicates and "*" next to other rules', () => {
    assert.deepEqual(validateAcl(['bind:a.example.com', 'bind:a.example.com', '*', 'bind:*']), { ok: true });
  });
});

describe('validateAcl: messages', () => {
  it('names the first invalid rule by 1-based position and JSON-quoted value', () => {
    const result = validateAcl(['bind:a.example.com', 'bind:env=prod', 'bind:example.com:080', 'bind:']);
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.index, 2);
      assert.equal(
        result.message,
        'ACL rule 3, "bind:example.com:080", is invalid. The port "080" is invalid; the port must be a number from 1 to 65535 without leading zeros.',
      );
    }
  });

  it('reports the first failure in list order, size or grammar alike', () => {
    const result = validateAcl(['*', 'bad', `bind:${domainOf(251)}`]);
    assert.ok(!result.ok && result.index === 1 && /^ACL rule 2, "bad", is invalid\. /.test(result.message));
    const sized = validateAcl(['*', `bind:${domainOf(251)}`, 'bad']);
    assert.ok(!sized.ok && sized.index === 1 && /^ACL rule 2, .* bytes long/.test(sized.message));
  });

  it('names the 100th rule as "ACL rule 100"', () => {
    const list = Array.from({ length: 100 }, () => '*');
    list[99] = 'bind:*=*';
    const result = validateAcl(list);
    assert.ok(!result.ok && result.index === 99 && result.message.startsWith('ACL rule 100, "bind:*=*", is invalid. '));
  });

  it('escapes control characters in the quoted value, keeping the message on one line', () => {
    const result = validateAcl(['bind:example.com\n"x"']);
    assert.ok(!result.ok);
    if (!result.ok) {
      assert.ok(result.message.includes('"bind:example.com\\n\\"x\\""'));
      assert.doesNotMatch(result.message, /\n/);
    }
  });

  it('truncates long values to 64 characters and marks the cut', () => {
    const rule = `bind:${label(64, 'x')}.example.com`; // 81 characters, invalid label
    const result = validateAcl([rule]);
    assert.ok(!result.ok);
    if (!result.ok) {
      assert.ok(result.message.startsWith(`ACL rule 1, "bind:${'x'.repeat(59)}…", is invalid. `));
      assert.ok(!result.message.includes(rule));
    }
  });

  it('does not cut a value of exactly 64 characters', () => {
    const rule = `bind:${'x'.repeat(59)}`; // one label: invalid, 64 characters
    const result = validateAcl([rule]);
    assert.ok(!result.ok && result.message.startsWith(`ACL rule 1, ${JSON.stringify(rule)}, is invalid.`));
  });

  it('never splits a surrogate pair when truncating', () => {
    const rule = `bind:${'\u{1f680}'.repeat(70)}`;
    const result = validateAcl([rule]);
    assert.ok(!result.ok);
    if (!result.ok) {
      assert.ok(result.message.includes(`"bind:${'\u{1f680}'.repeat(59)}…"`));
      assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])/.test(result.message), 'no lone high surrogate');
    }
  });

  it('rejects a non-string element defensively', () => {
    const result = validateAcl(['*', 42 as unknown as string]);
    assert.ok(!result.ok && result.index === 1 && /ACL rule 2 is not a string/.test(result.message));
  });

  it('every SPEC invalid example gets a message that names the rule and its value', () => {
    for (const rule of ['bind:', 'bind:*.*.example.com', 'bind:example.com:0', 'bind:example.com:080', 'bind:-bad.example.com', 'connect:example.com', 'bind: x.com', 'bind:*=*']) {
      const result = validateAcl(['*', rule]);
      assert.ok(!result.ok, rule);
      if (!result.ok) {
        assert.equal(result.index, 1);
        assert.ok(result.message.startsWith(`ACL rule 2, ${JSON.stringify(rule)}, is invalid. `), result.message);
        assert.ok(result.message.endsWith('.'));
      }
    }
  });
});

describe('parseAclRule / validateAcl: performance', () => {
  it('stays linear on hostile input', () => {
    const hostile = [
      `bind:${'a.'.repeat(50_000)}`,
      `bind:${'-'.repeat(100_000)}.com`,
      `bind:${'a'.repeat(100_000)}=${'b'.repeat(100_000)}!`,
      `bind:*.${'1.'.repeat(50_000)}`,
      `bind:${'1.'.repeat(50_000)}:80`,
      `bind:${'a-'.repeat(50_000)}:${'9'.repeat(50_000)}`,
    ];
    const start = performance.now();
    for (const rule of hostile) {
      assert.equal(parseAclRule(rule).ok, false);
      assert.equal(validateAcl([rule]).ok, false);
    }
    assert.ok(performance.now() - start < 1000);
  });

  it('validates 100 maximal rules quickly', () => {
    const list = Array.from({ length: 100 }, () => `bind:${domainOf(250)}`);
    const start = performance.now();
    for (let i = 0; i < 100; i++) assert.deepEqual(validateAcl(list), { ok: true });
    assert.ok(performance.now() - start < 2000);
  });
});

describe('aclPermitsBind: permit-all ACLs', () => {
  const binds = [{ domain: 'anything.example.org' }, { address: '1.2.3.4:5' }, { labels: { a: 'b' } }, {}];
  for (const acl of [[], ['*'], ['bind:*'], ['bind:a.example.com', '*'], ['bind:env=prod', 'bind:*']]) {
    it(`${JSON.stringify(acl)} permits every bind`, () => {
      for (const bind of binds) assert.equal(aclPermitsBind(acl, bind), true, JSON.stringify(bind));
    });
  }
});

describe('aclPermitsBind: domains', () => {
  const cases: Array<[string[], string, boolean]> = [
    [['bind:app.example.com'], 'app.example.com', true],
    [['bind:app.example.com'], 'APP.Example.COM', true],
    [['bind:App.Example.COM'], 'app.example.com', true],
    [['bind:app.example.com'], 'other.example.com', false],
    [['bind:app.example.com'], 'x.app.example.com', false],
    [['bind:app.example.com'], 'example.com', false],
    [['bind:app.example.com'], '*.app.example.com', false],
    [['bind:app.example.com'], 'app.example.com.evil.net', false],
    [['bind:*.example.com'], 'a.example.com', true],
    [['bind:*.example.com'], 'a.b.example.com', true],
    [['bind:*.example.com'], 'a.b.c.d.example.com', true],
    [['bind:*.example.com'], '*.example.com', true],
    [['bind:*.example.com'], '*.a.example.com', true],
    [['bind:*.example.com'], 'A.EXAMPLE.COM', true],
    [['bind:*.Example.Com'], 'a.example.com', true],
    [['bind:*.example.com'], 'example.com', false],
    [['bind:*.example.com'], 'badexample.com', false],
    [['bind:*.example.com'], 'a.example.com.evil.net', false],
    [['bind:*.example.com'], 'example.com.a', false],
    [['bind:*.example.com'], '.example.com', false],
    [['bind:*.example.com'], '*.com', false],
    [['bind:*.example.com'], '*.*.example.com', false],
    [['bind:*.example.com'], 'a..example.com', false],
    [['bind:*.example.com'], 'a b.example.com', false],
    [['bind:*.example.com'], '', false],
    [['bind:*.a.example.com'], 'b.example.com', false],
    [['bind:*.a.example.com'], 'x.a.example.com', true],
    [['bind:x.example.com', 'bind:*.example.org'], 'y.example.org', true],
    [['bind:x.example.com', 'bind:*.example.org'], 'x.example.com', true],
    [['bind:x.example.com', 'bind:*.example.org'], 'example.org', false],
    [['bind:example.com:443'], 'example.com', false],
    [['bind:env=prod'], 'example.com', false],
  ];
  for (const [acl, domain, expected] of cases) {
    it(`${JSON.stringify(acl)} ${expected ? 'permits' : 'refuses'} domain ${JSON.stringify(domain)}`, () => {
      assert.equal(aclPermitsBind(acl, { domain }), expected);
    });
  }
});

describe('aclPermitsBind: addresses', () => {
  const cases: Array<[string[], string, boolean]> = [
    [['bind:1.tcp.example.net:20002'], '1.tcp.example.net:20002', true],
    [['bind:1.tcp.example.net:20002'], '1.TCP.Example.NET:20002', true],
    [['bind:1.tcp.example.net:20002'], '1.tcp.example.net:20003', false],
    [['bind:1.tcp.example.net:20002'], '2.tcp.example.net:20002', false],
    [['bind:1.tcp.example.net:20002'], '1.tcp.example.net:020002', false],
    [['bind:1.tcp.example.net:20002'], '1.tcp.example.net', false],
    [['bind:1.tcp.example.net:20002'], '', false],
    [['bind:10.0.0.7:8443'], '10.0.0.7:8443', true],
    [['bind:10.0.0.7:8443'], '10.0.0.07:8443', false],
    [['bind:10.0.0.7:8443'], '10.0.0.7:443', false],
    [['bind:*.example.net'], 'a.example.net:80', false],
    [['bind:a.example.net'], 'a.example.net:80', false],
    [['bind:a.example.net:80', 'bind:b.example.net:81'], 'b.example.net:81', true],
    [['bind:a.example.net:80', 'bind:b.example.net:81'], 'b.example.net:80', false],
  ];
  for (const [acl, address, expected] of cases) {
    it(`${JSON.stringify(acl)} ${expected ? 'permits' : 'refuses'} address ${JSON.stringify(address)}`, () => {
      assert.equal(aclPermitsBind(acl, { address }), expected);
    });
  }
});

describe('aclPermitsBind: labels', () => {
  const cases: Array<[string[], Record<string, string>, boolean]> = [
    [['bind:env=prod'], { env: 'prod' }, true],
    [['bind:env=prod'], { env: 'dev' }, false],
    [['bind:env=prod'], { Env: 'prod' }, false],
    [['bind:env=prod'], { env: 'Prod' }, false],
    [['bind:app=*'], { app: 'anything' }, true],
    [['bind:app=*'], { other: 'anything' }, false],
    [['bind:*=edge'], { whatever: 'edge' }, true],
    [['bind:*=edge'], { whatever: 'core' }, false],
    // Several labels: every requested label must be permitted by some rule.
    [['bind:env=prod'], { env: 'prod', team: 'a' }, false],
    [['bind:env=prod', 'bind:team=*'], { env: 'prod', team: 'a' }, true],
    [['bind:*=edge', 'bind:env=prod'], { a: 'edge', b: 'edge', env: 'prod' }, true],
    [['bind:*=edge', 'bind:env=prod'], { a: 'edge', env: 'dev' }, false],
    // Malformed requested labels match nothing, even a wildcard rule.
    [['bind:*=edge'], { 'bad key': 'edge' }, false],
    [['bind:app=*'], { app: '' }, false],
    // No labels requested: nothing to permit, so a restricting ACL refuses.
    [['bind:env=prod'], {}, false],
    [['bind:example.com'], { env: 'prod' }, false],
  ];
  for (const [acl, labels, expected] of cases) {
    it(`${JSON.stringify(acl)} ${expected ? 'permits' : 'refuses'} labels ${JSON.stringify(labels)}`, () => {
      assert.equal(aclPermitsBind(acl, { labels }), expected);
    });
  }

  it('ignores inherited properties of the labels object', () => {
    const labels = Object.create({ evil: 'x' }) as Record<string, string>;
    labels['env'] = 'prod';
    assert.equal(aclPermitsBind(['bind:env=prod'], { labels }), true);
  });
});

describe('aclPermitsBind: combined binds and odd ACLs', () => {
  it('a bind requesting nothing is refused under a restricting ACL', () => {
    assert.equal(aclPermitsBind(['bind:example.com'], {}), false);
  });

  it('every requested part must be permitted', () => {
    const acl = ['bind:*.example.com', 'bind:env=prod'];
    assert.equal(aclPermitsBind(acl, { domain: 'a.example.com', labels: { env: 'prod' } }), true);
    assert.equal(aclPermitsBind(acl, { domain: 'a.example.com', labels: { env: 'dev' } }), false);
    assert.equal(aclPermitsBind(acl, { domain: 'a.example.org', labels: { env: 'prod' } }), false);
    assert.equal(aclPermitsBind(acl, { domain: 'a.example.com', address: 'a.example.com:80' }), false);
  });

  it('invalid stored rules match nothing and do not permit all', () => {
    assert.equal(aclPermitsBind(['bind:*=*'], { labels: { a: 'b' } }), false);
    assert.equal(aclPermitsBind(['BIND:*'], { domain: 'a.example.com' }), false);
    assert.equal(aclPermitsBind([' *'], { domain: 'a.example.com' }), false);
    assert.equal(aclPermitsBind(['bind:01.2.3.4'], { domain: '01.2.3.4' }), false);
  });

  it('an invalid rule next to a valid one does not block the valid one', () => {
    assert.equal(aclPermitsBind(['bind:', 'bind:a.example.com'], { domain: 'a.example.com' }), true);
  });
});

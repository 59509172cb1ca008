// Tunnel credential ACLs (SPEC 5.3): the rule grammar, list validation and bind matching.
// Pure: no I/O, no HTTP, no SQL. Everything is hand-parsed or uses anchored, non-nested
// regexes, so cost stays linear in the input however hostile it is.
//
// Decisions where SPEC 5.3 leaves room (mirrored in the project docs):
// - An all-numeric dotted host ("1.2.3.4", "123.456") is held to the IPv4 rule wherever it
//   appears: `bind:10.0.0.7` and `bind:10.0.0.7:80` are valid (the grammar's domain production
//   admits digit labels), `bind:123.456` and `bind:256.1.1.1` are not, and no wildcard may
//   precede it (`bind:*.1.2.3.4`), since a wildcard applies to domain names only.
// - `bind:localhost` and `bind:localhost:80` are invalid: a domain needs two labels, and the
//   address host is `domain | ipv4`, so it needs two labels as well.
// - `bind:*.com` is invalid: "*." must be followed by a full domain of two or more labels.
// - `bind:*:80` and `bind:*.example.com:443` are invalid: the address host is `domain | ipv4`
//   (no wildcard), and the `"*." domain` form has no port.
// - The 253-character domain limit applies to the domain production (for `*.x.y`, to `x.y`).
//   Through validateAcl the 255-byte rule limit is reached first (`bind:` + 250 characters).
// - parseAclRule checks the grammar only; validateAcl adds the count and byte limits.
// - Duplicate rules, and `*` next to other rules, are accepted: the SPEC bounds only count and
//   size, and keeps the order given.
// - Matching: domain rules match only a bind's domain, address rules only its address, label
//   rules only its labels. Every part a bind requests must be permitted (every label by some
//   label rule); a bind that requests nothing is refused under a restricting ACL. Labels and
//   ports compare exactly, hosts and domains case-insensitively. Malformed bind values and
//   invalid stored rules match nothing (fail closed).

import { quote, utf8Bytes } from './text.js';

export const ACL_MAX_RULES = 100;
export const ACL_RULE_MAX_BYTES = 255;

const DOMAIN_MAX_CHARS = 253;
const DNS_LABEL_MAX_CHARS = 63;
const LABEL_PART_MAX_CHARS = 63;

export type AclTarget =
  | { kind: 'any' } // '*' or 'bind:*'
  | { kind: 'domain'; domain: string; wildcard: boolean }
  | { kind: 'address'; host: string; port: number }
  | { kind: 'label'; key: string | '*'; value: string | '*' };

export type AclRuleCheck = { ok: true; target: AclTarget } | { ok: false; reason: string };

export type AclCheck = { ok: true } | { ok: false; index: number; message: string };

export type AclBind = { domain?: string; address?: string; labels?: Record<string, string> };

const BIND_PREFIX = 'bind:';

// Single character classes with a bounded repeat: no backtracking blow-up possible.
const DNS_LABEL_CHARS = /^[A-Za-z0-9-]+$/;
const LABEL_PART_CHARS = /^[A-Za-z0-9_.-]+$/;
const DIGITS_AND_DOTS = /^[0-9.]+$/;
const DIGIT = /[0-9]/;
const PORT = /^[1-9][0-9]{0,4}$/;
const OCTET = /^(?:0|[1-9][0-9]{0,2})$/;

/** Digits and dots only, with at least one digit ("." alone is just a bad domain). */
function isNumericHost(host: string): boolean {
  return DIGITS_AND_DOTS.test(host) && DIGIT.test(host);
}

/** Names the first character outside printable ASCII, or null when there is none. */
function badCharacter(rule: string, noun: 'rule' | 'hostport' | 'hostname' = 'rule'): string | null {
  for (let i = 0; i < rule.length; i++) {
    const c = rule.charCodeAt(i);
    if (c > 0x20 && c < 0x7f) continue;
    const position = i + 1;
    if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) {
      const name = c === 0x20 ? 'a space' : c === 0x09 ? 'a tab' : 'a line break';
      return `The ${noun} contains ${name} at character ${position}; ${noun}s must not contain whitespace.`;
    }
    if (c < 0x20 || c === 0x7f) {
      return `The ${noun} contains a control character at character ${position}; remove it.`;
    }
    return `The ${noun} contains the non-ASCII character ${quote(String.fromCodePoint(rule.codePointAt(i) ?? c))} at character ${position}; ${noun}s allow only ASCII letters, digits and the punctuation of the grammar (write internationalized domains in their xn-- form).`;
  }
  return null;
}

/** Checks the `domain` production; returns why it fails, or null. */
function domainProblem(domain: string): string | null {
  if (domain.length > DOMAIN_MAX_CHARS) {
    return `The domain is ${domain.length} characters long; a domain may have at most ${DOMAIN_MAX_CHARS}.`;
  }
  const labels = domain.split('.');
  if (labels.length < 2) {
    return `The domain ${quote(domain)} has a single label; a domain needs at least two, such as "example.com".`;
  }
  for (const label of labels) {
    if (label === '') {
      return `The domain ${quote(domain)} has an empty label; remove the leading, trailing or doubled ".".`;
    }
    if (label.length > DNS_LABEL_MAX_CHARS) {
      return `The domain label ${quote(label)} is ${label.length} characters long; a label may have at most ${DNS_LABEL_MAX_CHARS}.`;
    }
    if (!DNS_LABEL_CHARS.test(label)) {
      return `The domain label ${quote(label)} may contain only letters, digits and "-".`;
    }
    if (label.startsWith('-') || label.endsWith('-')) {
      return `The domain label ${quote(label)} must not start or end with "-".`;
    }
  }
  return null;
}

/** Checks a dotted-quad IPv4 address; returns why it fails, or null. */
function ipv4Problem(host: string): string | null {
  const octets = host.split('.');
  if (octets.length !== 4) {
    return `The host ${quote(host)} is made of digits and dots, so it must be an IPv4 address of exactly four octets.`;
  }
  for (const octet of octets) {
    if (octet === '') return `The IPv4 address ${quote(host)} has an empty octet.`;
    if (!OCTET.test(octet)) {
      return octet.length > 1 && octet.startsWith('0') && octet.length <= 3
        ? `The IPv4 octet ${quote(octet)} in ${quote(host)} must not have leading zeros.`
        : `The IPv4 octet ${quote(octet)} in ${quote(host)} must be a number from 0 to 255 without leading zeros.`;
    }
    if (Number(octet) > 255) {
      return `The IPv4 octet ${quote(octet)} in ${quote(host)} must be a number from 0 to 255.`;
    }
  }
  return null;
}

/** Checks a domain-or-IPv4 host of an address; returns why it fails, or null. */
function hostProblem(host: string): string | null {
  if (host === '') return 'The address has no host before ":"; write it as host:port, such as "example.com:443".';
  if (host.includes('*')) {
    return `The address host ${quote(host)} cannot hold a "*": a wildcard applies only to a domain target without a port, such as "bind:*.example.com".`;
  }
  // Digits and dots only: held to the IPv4 rule, whatever the domain production would allow.
  return isNumericHost(host) ? ipv4Problem(host) : domainProblem(host);
}

function portProblem(port: string): string | null {
  if (PORT.test(port) && Number(port) <= 65535) return null;
  return `The port ${quote(port)} is invalid; the port must be a number from 1 to 65535 without leading zeros.`;
}

/**
 * SPEC §5.3's label `key` / `value` (1..63 of [A-Za-z0-9_.-]), the one rule for ACL label
 * targets, the labels an agent binds with and a tunnel group's labels; returns why `part` fails,
 * or null. `inAcl` adds the ACL's hints (its `*` wildcard, the key=value form).
 */
export function labelPartProblem(part: string, what: 'key' | 'value', inAcl = false): string | null {
  if (part === '') {
    return inAcl
      ? `The label ${what} is empty; write the label as key=value, with "*" for any ${what}.`
      : `The label ${what} is empty; it needs 1 to ${LABEL_PART_MAX_CHARS} characters.`;
  }
  if (part.length > LABEL_PART_MAX_CHARS) {
    return `The label ${what} ${quote(part)} is ${part.length} characters long; at most ${LABEL_PART_MAX_CHARS} are allowed.`;
  }
  if (!LABEL_PART_CHARS.test(part)) {
    return `The label ${what} ${quote(part)} may contain only letters, digits, "_", "." and "-"${inAcl ? ' (or be exactly "*")' : ''}.`;
  }
  return null;
}

function parseLabel(target: string): AclRuleCheck {
  const eq = target.indexOf('=');
  const key = target.slice(0, eq);
  const value = target.slice(eq + 1);
  if (value.includes('=')) {
    return { ok: false, reason: 'A label target may contain "=" only once; write it as key=value.' };
  }
  if (key === '*' && value === '*') {
    return { ok: false, reason: 'The label target "*=*" is not allowed; use "bind:*" to permit every bind.' };
  }
  const problem = (key === '*' ? null : labelPartProblem(key, 'key', true)) ?? (value === '*' ? null : labelPartProblem(value, 'value', true));
  return problem ? { ok: false, reason: problem } : { ok: true, target: { kind: 'label', key, value } };
}

function parseWildcardDomain(suffix: string): AclRuleCheck {
  if (suffix.includes(':')) {
    return { ok: false, reason: 'A wildcard domain target cannot have a port; use "bind:*.example.com", or an exact host with a port.' };
  }
  if (suffix.startsWith('*')) {
    return { ok: false, reason: 'A wildcard domain may have only one leading "*."; "bind:*.example.com" already matches subdomains at any depth.' };
  }
  if (suffix.includes('*')) {
    return { ok: false, reason: 'A "*" may appear only as the leading "*." of a domain.' };
  }
  if (isNumericHost(suffix)) {
    return { ok: false, reason: `A wildcard applies to domain names only, not to the IPv4-like host ${quote(suffix)}.` };
  }
  if (!suffix.includes('.')) {
    return { ok: false, reason: `"*." must be followed by a domain of at least two labels, such as "*.example.com", not ${quote(suffix)}.` };
  }
  const problem = domainProblem(suffix);
  return problem ? { ok: false, reason: problem } : { ok: true, target: { kind: 'domain', domain: suffix, wildcard: true } };
}

function parseAddress(target: string): AclRuleCheck {
  const colon = target.indexOf(':');
  if (target.indexOf(':', colon + 1) !== -1) {
    return { ok: false, reason: 'An address target must be host:port with a single ":"; IPv6 addresses are not supported.' };
  }
  const host = target.slice(0, colon);
  const port = target.slice(colon + 1);
  const problem = hostProblem(host) ?? portProblem(port);
  return problem ? { ok: false, reason: problem } : { ok: true, target: { kind: 'address', host, port: Number(port) } };
}

function parseDomain(target: string): AclRuleCheck {
  if (target.includes('*')) {
    return { ok: false, reason: 'A "*" may appear only as the whole target, as the leading "*." of a domain, or as a label key or value.' };
  }
  // By the grammar an all-numeric dotted name is a domain; SPEC 5.3 then holds any host made
  // only of digits and dots to the IPv4 rule, so `bind:10.0.0.7` is valid and `bind:256.1.1.1` not.
  if (isNumericHost(target)) {
    const problem = ipv4Problem(target);
    return problem ? { ok: false, reason: problem } : { ok: true, target: { kind: 'domain', domain: target, wildcard: false } };
  }
  const problem = domainProblem(target);
  return problem ? { ok: false, reason: problem } : { ok: true, target: { kind: 'domain', domain: target, wildcard: false } };
}

function parseTarget(target: string): AclRuleCheck {
  if (target === '') {
    return { ok: false, reason: 'The target after "bind:" is empty; give a domain, an address (host:port), a label (key=value) or "*".' };
  }
  if (target === '*') return { ok: true, target: { kind: 'any' } };
  // "=" and ":" never occur in domains, and "=" never in addresses, so they pick the production.
  if (target.includes('=')) return parseLabel(target);
  if (target.startsWith('*.')) return parseWildcardDomain(target.slice(2));
  if (target.includes(':')) return parseAddress(target);
  return parseDomain(target);
}

/** Parses one rule against the SPEC 5.3 grammar. Byte and count limits are validateAcl's job. */
export function parseAclRule(rule: string): AclRuleCheck {
  if (typeof rule !== 'string') return { ok: false, reason: 'A rule must be a string.' };
  if (rule === '') return { ok: false, reason: 'The rule is empty; write "*" or "bind:<target>".' };
  const bad = badCharacter(rule);
  if (bad) return { ok: false, reason: bad };
  if (rule === '*') return { ok: true, target: { kind: 'any' } };
  if (rule.startsWith(BIND_PREFIX)) return parseTarget(rule.slice(BIND_PREFIX.length));
  const colon = rule.indexOf(':');
  const kind = colon === -1 ? '' : rule.slice(0, colon);
  if (kind.toLowerCase() === 'bind') {
    return { ok: false, reason: `The rule kind ${quote(kind)} must be written in lower case: "bind:".` };
  }
  if (kind !== '' && /^[A-Za-z]+$/.test(kind)) {
    return { ok: false, reason: `The rule kind ${quote(kind)} is not supported; a rule must be "*" or start with "bind:".` };
  }
  return { ok: false, reason: 'A rule must be "*" or start with "bind:", such as "bind:app.example.com".' };
}

/**
 * Validates a whole ACL: the count first, then each rule in order (bytes, then grammar).
 * `index` is the 0-based array position of the offending rule (100 for a list that is too
 * long: the first rule over the limit); the message names it by 1-based position.
 */
export function validateAcl(rules: readonly string[]): AclCheck {
  if (rules.length > ACL_MAX_RULES) {
    const excess = rules.length - ACL_MAX_RULES;
    return {
      ok: false,
      index: ACL_MAX_RULES,
      message: `An ACL may hold at most ${ACL_MAX_RULES} rules, but ${rules.length} were given; remove ${excess} ${excess === 1 ? 'rule' : 'rules'}.`,
    };
  }
  for (let index = 0; index < rules.length; index++) {
    const rule = rules[index] as unknown;
    const position = index + 1;
    if (typeof rule !== 'string') {
      return { ok: false, index, message: `ACL rule ${position} is not a string; every ACL rule must be a string.` };
    }
    const bytes = utf8Bytes(rule);
    if (bytes > ACL_RULE_MAX_BYTES) {
      return {
        ok: false,
        index,
        message: `ACL rule ${position}, ${quote(rule)}, is ${bytes} bytes long; shorten it to at most ${ACL_RULE_MAX_BYTES} bytes of UTF-8.`,
      };
    }
    const check = parseAclRule(rule);
    if (!check.ok) {
      return { ok: false, index, message: `ACL rule ${position}, ${quote(rule)}, is invalid. ${check.reason}` };
    }
  }
  return { ok: true };
}

/** A bind's domain as a rule target would parse it (plain or `*.`), or null when malformed. */
function bindDomain(domain: string): { name: string; wildcard: boolean } | null {
  const check = parseTarget(domain);
  if (!check.ok || check.target.kind !== 'domain') return null;
  return { name: check.target.domain.toLowerCase(), wildcard: check.target.wildcard };
}

function domainPermitted(rules: readonly AclTarget[], domain: string): boolean {
  const bind = bindDomain(domain);
  if (!bind) return false;
  const full = bind.wildcard ? `*.${bind.name}` : bind.name;
  return rules.some((rule) => {
    if (rule.kind !== 'domain') return false;
    const name = rule.domain.toLowerCase();
    if (!rule.wildcard) return !bind.wildcard && bind.name === name;
    // `*.example.com` covers `*.example.com` itself and every name ending in `.example.com`;
    // a wildcard bind `*.a.example.com` is such a name, so it is covered too.
    return full === `*.${name}` || bind.name.endsWith(`.${name}`);
  });
}

function addressPermitted(rules: readonly AclTarget[], address: string): boolean {
  if (typeof address !== 'string' || !address.includes(':') || badCharacter(address)) return false;
  const check = parseAddress(address);
  if (!check.ok || check.target.kind !== 'address') return false;
  const host = check.target.host.toLowerCase();
  const port = check.target.port;
  return rules.some((rule) => rule.kind === 'address' && rule.port === port && rule.host.toLowerCase() === host);
}

function labelPermitted(rules: readonly AclTarget[], key: string, value: string): boolean {
  if (typeof key !== 'string' || typeof value !== 'string') return false;
  if (labelPartProblem(key, 'key') || labelPartProblem(value, 'value')) return false;
  return rules.some(
    (rule) => rule.kind === 'label' && (rule.key === '*' || rule.key === key) && (rule.value === '*' || rule.value === value),
  );
}

/**
 * Whether an ACL lets a tunnel session make this bind. Empty, `*` or `bind:*` permits all;
 * otherwise every requested part (domain, address, each label) must be permitted by a rule of
 * its own kind, and a bind requesting nothing is refused.
 */
export function aclPermitsBind(rules: readonly string[], bind: AclBind): boolean {
  if (rules.length === 0) return true;
  const targets: AclTarget[] = [];
  for (const rule of rules) {
    const check = typeof rule === 'string' ? parseAclRule(rule) : null;
    if (!check?.ok) continue; // stored ACLs are validated; anything else matches nothing
    if (check.target.kind === 'any') return true;
    targets.push(check.target);
  }
  let requested = false;
  if (bind.domain !== undefined) {
    requested = true;
    if (typeof bind.domain !== 'string' || !domainPermitted(targets, bind.domain)) return false;
  }
  if (bind.address !== undefined) {
    requested = true;
    if (!addressPermitted(targets, bind.address)) return false;
  }
  if (bind.labels !== undefined) {
    if (bind.labels === null || typeof bind.labels !== 'object') return false;
    for (const [key, value] of Object.entries(bind.labels)) {
      requested = true;
      if (!labelPermitted(targets, key, value)) return false;
    }
  }
  return requested;
}

/**
 * Checks a host name with the same `domain` production an ACL rule uses: printable ASCII, two
 * labels or more, an all-numeric host only as IPv4. With `wildcard`, a bind's hostname may also
 * be `*.` and a domain (a wildcard endpoint: SPEC §5.3's `"*." domain` target, which a rule
 * `bind:*.example.com` permits). Returns why it fails, or null.
 */
export function bindHostnameProblem(hostname: string, options: { wildcard?: boolean } = {}): string | null {
  if (hostname === '') return 'The hostname is empty.';
  const bad = badCharacter(hostname, 'hostname');
  if (bad) return bad;
  if (hostname.includes(':')) return `The hostname ${quote(hostname)} holds a ":"; give the name without a port.`;
  if (hostname.includes('*')) {
    const rest = hostname.slice(2);
    if (!options.wildcard) return `The hostname ${quote(hostname)} holds a "*"; it must name one host.`;
    if (!hostname.startsWith('*.') || rest.includes('*')) {
      return `The hostname ${quote(hostname)} holds a "*" other than a leading "*." (a wildcard endpoint, such as "*.example.com").`;
    }
    if (isNumericHost(rest)) return `The wildcard hostname ${quote(hostname)} names an IP address; a wildcard applies to domains only.`;
    return domainProblem(rest);
  }
  return isNumericHost(hostname) ? ipv4Problem(hostname) : domainProblem(hostname);
}

/** Whether a bind's (valid) hostname is a wildcard endpoint's, `*.example.com`. */
export function isWildcardHostname(hostname: string): boolean {
  return hostname.startsWith('*.');
}

/** Whether an ACL permits every bind: empty, or holding `*` or `bind:*` (SPEC 5.3). */
export function aclIsUnrestricted(rules: readonly string[]): boolean {
  return rules.length === 0 || rules.some((rule) => rule === '*' || rule === 'bind:*');
}

/**
 * Checks a `host:port` string against the `address` production of SPEC 5.3 (TLS edge
 * hostports use the same grammar). Returns why it fails, or null.
 */
export function hostportProblem(hostport: string): string | null {
  if (hostport === '') return 'The hostport is empty; write it as host:port, such as "app.example.com:443".';
  const bad = badCharacter(hostport, 'hostport');
  if (bad) return bad;
  if (!hostport.includes(':')) return `The hostport ${quote(hostport)} has no port; write it as host:port, such as "app.example.com:443".`;
  if (hostport.includes('*')) return `The hostport ${quote(hostport)} holds a "*"; a hostport names one host, such as "app.example.com:443".`;
  const parsed = parseAddress(hostport);
  return parsed.ok ? null : parsed.reason;
}

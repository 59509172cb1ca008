/**
 * What the actions of a TLS edge mean: which types exist, which are allowed in on_tcp_connect,
 * and the configuration each one takes. Config shape problems are ERR_NGROK_2203, missing or
 * out-of-domain values ERR_NGROK_2204, bad CIDRs 2217, bad interpolations 2224.
 */
import type { MapNode, TreeNode } from './parse.js';
import type { RawAction, RawRule } from './structure.js';
import { actionLabel, field, isNull, rejectUnknownKeys, scalarOrKind } from './structure.js';
import { CODES, fail, kindOf, quoted, subjectNoun } from './problem.js';
import { explainInvalidCidr, parseCidr } from './cidr.js';
import { checkInterpolations, describeCelType, interpolationType, isWholeInterpolation } from './expressions.js';
import type { PolicyValue, ValidatedAction } from './types.js';
import { PHASE_ORDER, PHASES, type EndpointKind, type PhaseDescriptor } from './phases.js';
import { validateTerminateTls } from './terminate-tls.js';
import { validateHttpAction } from './http-actions.js';
import { validateLoginAction } from './login-actions.js';

/** Every action type the reference service knows: one a phase does not serve is "not allowed here" (2202), not "unknown" (2201). */
export const KNOWN_ACTIONS: ReadonlySet<string> = new Set([
  'deny',
  'log',
  'restrict-ips',
  'add-headers',
  'basic-auth',
  'circuit-breaker',
  'close-connection',
  'compress-response',
  'custom-response',
  'forward-internal',
  'http-request',
  'jwt-validation',
  'oauth',
  'openid-connect',
  'owasp-crs-request',
  'owasp-crs-response',
  'rate-limit',
  'redirect',
  'remove-headers',
  'saml',
  'set-vars',
  'terminate-tls',
  'url-rewrite',
  'verify-webhook',
]);

/** Actions after which nothing in the same rule can run: they end the connection or answer the request. */
const ENDS_THE_PHASE = new Set(['deny', 'custom-response', 'close-connection']);

/** Validates the actions of a rule of `phase` in order and returns their normalized form. */
export function validateActions(rule: RawRule, actions: RawAction[], phase: PhaseDescriptor, kind: EndpointKind = 'tls-edge'): ValidatedAction[] {
  const result: ValidatedAction[] = [];
  let denyAt: number | undefined;
  for (const action of actions) {
    const label = actionLabel(rule, action);
    const where = `${label}, line ${action.line}`;
    checkType(where, action.type, phase);
    // After the type (an action that can never be allowed is the bigger problem), before its config.
    if (denyAt !== undefined) {
      fail(
        CODES.unreachable,
        `${where}: this action can never run, because action ${denyAt} (${actions[denyAt - 1]!.type}) before it in the same rule ends the ${phase.name === 'on_tcp_connect' ? 'connection' : 'request'}; remove it or move it before the ${actions[denyAt - 1]!.type}.`,
      );
    }
    const configWhere = `${label}, line ${action.configLine}`;
    if (ENDS_THE_PHASE.has(action.type)) denyAt = action.number;
    if (action.type === 'openid-connect' || action.type === 'oauth') {
      result.push(validateLoginAction(action.type, label, configWhere, action.config));
      continue;
    }
    if (phase.name !== 'on_tcp_connect' && action.type !== 'log' && action.type !== 'restrict-ips') {
      result.push(validateHttpAction(action.type, label, configWhere, action.config));
      continue;
    }
    switch (action.type) {
      case 'deny':
        result.push(validateDeny(configWhere, action.config));
        break;
      case 'close-connection':
        // https://ngrok.com/docs/traffic-policy/actions/close-connection: no configuration; on TCP it closes as deny does.
        result.push(validateDeny(configWhere, action.config, 'close-connection'));
        break;
      case 'log':
        result.push(validateLog(label, configWhere, action.config));
        break;
      case 'restrict-ips':
        result.push(validateRestrictIps(label, configWhere, action.config));
        break;
      case 'terminate-tls':
        result.push(validateTerminateTls(configWhere, action.config, kind));
        break;
      case 'set-vars':
        result.push(validateHttpAction(action.type, label, configWhere, action.config));
        break;
      default:
        throw new Error(`internal: ${action.type} is served by a phase but has no validator`);
    }
  }
  return result;
}

function checkType(where: string, type: string, phase: PhaseDescriptor): void {
  if (phase.actions.includes(type)) return;
  if (KNOWN_ACTIONS.has(type)) {
    const elsewhere = PHASE_ORDER.filter((name) => PHASES[name].actions.includes(type));
    const served = elsewhere.length > 0 ? '' : ' (burrow does not serve it in any phase)';
    fail(
      CODES.actionNotAllowed,
      `${where}: action type ${quoted(type)} is not allowed in the ${phase.name} phase of ${subjectNoun()}${served}; use ${listText(phase.actions, 'or')} instead.`,
    );
  }
  const near = [...KNOWN_ACTIONS].find((known) => known === type.trim().toLowerCase());
  const hint = near ? ` Action types are lower case without spaces: did you mean ${quoted(near)}?` : '';
  fail(
    CODES.unknownAction,
    `${where}: action type ${quoted(type)} is unknown; the ${phase.name} phase of ${subjectNoun()} supports ${listText(phase.actions, 'and')}.${hint}`,
  );
}

/** "a, b and c" / "a, b or c". */
function listText(items: readonly string[], last: 'and' | 'or'): string {
  return items.length === 1 ? items[0]! : `${items.slice(0, -1).join(', ')} ${last} ${items.at(-1)!}`;
}

function configMap(where: string, config: TreeNode): MapNode {
  if (config.kind !== 'map') {
    fail(CODES.configMalformed, `${where}: config must be a mapping, but it is ${kindOf(scalarOrKind(config))}.`);
  }
  return config;
}

function validateDeny(where: string, config: TreeNode | null, type: 'deny' | 'close-connection' = 'deny'): ValidatedAction {
  if (config) {
    const map = configMap(where, config);
    const first = map.entries[0];
    if (first) {
      fail(
        CODES.configMalformed,
        `${where}: ${type} takes no config, but config has the key ${quoted(first.key, 32)}; remove the config.`,
      );
    }
  }
  return { type, config: null };
}

function validateLog(label: string, where: string, config: TreeNode | null): ValidatedAction {
  const required = `${where}: log needs config.metadata, a mapping of the names and values to log, for example "metadata: {country: '\${conn.geo.country_code}'}".`;
  if (!config) fail(CODES.configInvalid, required);
  const map = configMap(where, config);
  rejectUnknownKeys(
    map,
    ['metadata'],
    (key) => `${where}: config has the unknown key ${quoted(key, 32)}; log accepts only metadata.`,
    CODES.configMalformed,
  );
  const metadata = field(map, 'metadata');
  if (!metadata || isNull(metadata.value)) fail(CODES.configInvalid, required);
  if (metadata.value.kind !== 'map') {
    fail(
      CODES.configMalformed,
      `${where}: config.metadata must be a mapping of names to values, but it is ${kindOf(scalarOrKind(metadata.value))}.`,
    );
  }
  const values = metadataValue(metadata.value, label, 'config.metadata') as { [key: string]: PolicyValue };
  return { type: 'log', config: { metadata: values } };
}

/**
 * Copies metadata into plain values, checking `${...}` in string values at every depth (nested
 * mappings and lists too: a log sink serializes all of it). Keys are never interpolated.
 */
function metadataValue(node: TreeNode, label: string, path: string): PolicyValue {
  if (node.kind === 'scalar') {
    if (typeof node.value === 'string') checkInterpolations(`${label}, line ${node.line}`, path, node.value);
    return node.value;
  }
  if (node.kind === 'seq') {
    return node.items.map((item, index) => metadataValue(item, label, `${path}, entry ${index + 1}`));
  }
  const out: { [key: string]: PolicyValue } = {};
  for (const entry of node.entries) {
    const value = metadataValue(entry.value, label, joinKey(path, entry.key));
    // defineProperty: a key such as "__proto__" must stay data, not change the object's prototype.
    Object.defineProperty(out, entry.key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function joinKey(path: string, key: string): string {
  if (/, entry \d+$/.test(path)) return `${path}, key ${quoted(key, 32)}`;
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? `${path}.${key.slice(0, 32)}` : `${path}[${quoted(key, 32)}]`;
}

const RESTRICT_KEYS = ['allow', 'deny', 'enforce', 'ip_policies'];

function validateRestrictIps(label: string, where: string, config: TreeNode | null): ValidatedAction {
  const required = `${where}: restrict-ips needs config.allow or config.deny, a non-empty list of CIDRs such as "10.0.0.0/8".`;
  if (!config) fail(CODES.configInvalid, required);
  const map = configMap(where, config);
  rejectUnknownKeys(
    map,
    RESTRICT_KEYS,
    (key) => `${where}: config has the unknown key ${quoted(key, 32)}; restrict-ips accepts allow, deny and enforce.`,
    CODES.configMalformed,
  );
  if (field(map, 'ip_policies')) {
    fail(
      CODES.configInvalid,
      `${where}: config.ip_policies is not supported (burrow does not serve IP policies); list the CIDRs in config.allow and config.deny instead.`,
    );
  }
  let enforce = true;
  const enforceField = field(map, 'enforce');
  if (enforceField && !isNull(enforceField.value)) {
    const value = enforceField.value;
    if (value.kind !== 'scalar' || typeof value.value !== 'boolean') {
      fail(
        CODES.configMalformed,
        `${where}: config.enforce must be true or false, but it is ${kindOf(scalarOrKind(value))}.`,
      );
    }
    enforce = value.value;
  }
  const allow = cidrList(label, where, map, 'allow');
  const deny = cidrList(label, where, map, 'deny');
  if (allow.length === 0 && deny.length === 0) fail(CODES.configInvalid, required);
  for (const list of [allow, deny]) for (const entry of list) checkCidrEntry(entry);
  return { type: 'restrict-ips', config: { allow: allow.map((e) => e.text), deny: deny.map((e) => e.text), enforce } };
}

interface CidrEntry {
  text: string;
  /** Message prefix, e.g. `Rule 1, action 1, line 7`. */
  where: string;
  /** e.g. `config.allow, entry 2`. */
  path: string;
}

/** The strings of config.allow or config.deny; only their types are checked here. */
function cidrList(label: string, where: string, map: MapNode, key: 'allow' | 'deny'): CidrEntry[] {
  const list = field(map, key);
  if (!list || isNull(list.value)) return [];
  if (list.value.kind !== 'seq') {
    fail(
      CODES.configMalformed,
      `${where}: config.${key} must be a list of CIDR strings, but it is ${kindOf(scalarOrKind(list.value))}.`,
    );
  }
  return list.value.items.map((item, index) => {
    const entry = { where: `${label}, line ${item.line}`, path: `config.${key}, entry ${index + 1}` };
    if (item.kind !== 'scalar' || typeof item.value !== 'string') {
      fail(
        CODES.configMalformed,
        `${entry.where}: ${entry.path} must be a CIDR string such as "10.0.0.0/8", but it is ${kindOf(scalarOrKind(item))}.`,
      );
    }
    return { ...entry, text: item.value };
  });
}

function checkCidrEntry(entry: CidrEntry): void {
  if (entry.text.includes('${')) {
    const parts = checkInterpolations(entry.where, entry.path, entry.text);
    if (isWholeInterpolation(entry.text, parts)) {
      const type = interpolationType(parts[0]!);
      if (type !== 'string' && type !== 'dyn') {
        fail(
          CODES.interpolation,
          `${entry.where}: ${entry.path}, ${quoted(entry.text)}, produces ${describeCelType(type)}, but a CIDR entry must produce a string.`,
        );
      }
      return;
    }
    fail(
      CODES.invalidCidr,
      `${entry.where}: ${entry.path}, ${quoted(entry.text)}, is not a valid CIDR; an entry is either a CIDR such as "10.0.0.0/8" or a single interpolation such as "\${...}" as the whole string.`,
    );
  }
  if (!parseCidr(entry.text)) {
    fail(
      CODES.invalidCidr,
      `${entry.where}: ${entry.path}, ${quoted(entry.text)}, is not a valid IPv4 or IPv6 CIDR: ${explainInvalidCidr(entry.text)}.`,
    );
  }
}

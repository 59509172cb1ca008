/**
 * The shape of a policy document: top-level phases, rules and actions, without judging what the
 * actions or expressions mean. Shape problems are ERR_NGROK_2236, except a phase the endpoint
 * kind does not run (2230).
 * Rules and actions are numbered from 1 in every message.
 */
import type { MapNode, TreeNode } from './parse.js';
import { CODES, fail, kindOf, quoted, subjectNoun, utf8Bytes } from './problem.js';
import { MAX_RULE_NAME_BYTES } from './limits.js';
import { phaseOfKey, phasesText, type EndpointKind, type PhaseDescriptor } from './phases.js';

export interface RawExpression {
  text: string;
  line: number;
}

export interface RawAction {
  /** 1-based position in the rule. */
  number: number;
  line: number;
  type: string;
  /** null when `config` is absent or null (SPEC: a null config is an absent one). */
  config: TreeNode | null;
  /** Line of the `config` key, or of the action when there is none. */
  configLine: number;
}

export interface RawRule {
  /** 1-based position in the phase. */
  number: number;
  line: number;
  name: string | null;
  expressions: RawExpression[];
  /** null when `actions` is absent or null; such a rule is reported as 2206 later. */
  actions: RawAction[] | null;
}

const RULE_KEYS = ['name', 'expressions', 'actions'];
const ACTION_KEYS = ['type', 'config'];

/** "Rule 2 ("Block countries")": how every message names a rule. */
export function ruleLabel(number: number, name: string | null): string {
  return name ? `Rule ${number} (${quoted(name, 32)})` : `Rule ${number}`;
}

export function actionLabel(rule: RawRule, action: { number: number }): string {
  return `${ruleLabel(rule.number, rule.name)}, action ${action.number}`;
}

/** The rules of each phase the document holds, refusing a phase `kind` does not run (2230). */
export function readPhases(root: TreeNode | null, kind: EndpointKind): Map<PhaseDescriptor, RawRule[]> {
  const phases = new Map<PhaseDescriptor, RawRule[]>();
  if (root === null) return phases;
  if (root.kind === 'scalar' && root.value === null) return phases;
  if (root.kind !== 'map') {
    fail(
      CODES.malformed,
      `The top level of the traffic policy (line ${root.line}) must be a mapping of phase names to lists of rules, such as "on_tcp_connect: [...]", but it is ${kindOf(scalarOrKind(root))}.`,
    );
  }
  const keys = new Map<PhaseDescriptor, string>();
  for (const entry of root.entries) {
    const phase = phaseOfKey(entry.key, kind);
    if (!phase) {
      fail(
        CODES.malformed,
        `The top-level key ${quoted(entry.key)} (line ${entry.line}) is not a phase; the policy of ${subjectNoun()} has only ${phasesText(kind)} (or the legacy names inbound and outbound).`,
      );
    }
    if (!phase.runsOn.has(kind)) {
      fail(
        CODES.phaseNotAllowed,
        `The phase ${entry.key} (line ${entry.line}) is not available on ${subjectNoun()}; ${subjectNoun()} has only the ${phasesText(kind)} phase${phasesText(kind).includes(' and ') ? 's' : ''}.`,
      );
    }
    const earlier = keys.get(phase);
    if (earlier !== undefined) {
      fail(
        CODES.malformed,
        `The traffic policy has both ${earlier} and ${entry.key} (line ${entry.line}), two names of the ${phase.name} phase; keep only ${phase.name}.`,
      );
    }
    keys.set(phase, entry.key);
    phases.set(phase, readPhaseRules(entry.key, entry.value));
  }
  return phases;
}

function readPhaseRules(key: string, value: TreeNode): RawRule[] {
  if (value.kind === 'scalar' && value.value === null) return [];
  if (value.kind !== 'seq') {
    fail(CODES.malformed, `The phase ${key} (line ${value.line}) must be a list of rules, but it is ${kindOf(scalarOrKind(value))}.`);
  }
  return value.items.map((item, index) => readRule(item, index + 1));
}

function readRule(node: TreeNode, number: number): RawRule {
  if (node.kind !== 'map') {
    fail(
      CODES.malformed,
      `Rule ${number}, line ${node.line}: a rule must be a mapping with the keys name, expressions and actions, but it is ${kindOf(scalarOrKind(node))}.`,
    );
  }
  const name = readName(node, number);
  const label = ruleLabel(number, name);
  rejectUnknownKeys(node, RULE_KEYS, (key, line) =>
    `${label}, line ${line}: the key ${quoted(key, 32)} is not allowed in a rule; a rule has only the keys name, expressions and actions.`,
  );

  const expressions: RawExpression[] = [];
  const exprs = field(node, 'expressions');
  if (exprs && !isNull(exprs.value)) {
    if (exprs.value.kind !== 'seq') {
      fail(
        CODES.malformed,
        `${label}, line ${exprs.line}: expressions must be a list of strings, but it is ${kindOf(scalarOrKind(exprs.value))}.`,
      );
    }
    exprs.value.items.forEach((item, index) => {
      if (item.kind !== 'scalar' || typeof item.value !== 'string') {
        fail(
          CODES.malformed,
          `${label}, expression ${index + 1}, line ${item.line}: an expression must be a string, but it is ${kindOf(scalarOrKind(item))}; write it in quotes.`,
        );
      }
      expressions.push({ text: item.value, line: item.line });
    });
  }

  let actions: RawAction[] | null = null;
  const acts = field(node, 'actions');
  if (acts && !isNull(acts.value)) {
    if (acts.value.kind !== 'seq') {
      fail(
        CODES.malformed,
        `${label}, line ${acts.line}: actions must be a list of actions, but it is ${kindOf(scalarOrKind(acts.value))}.`,
      );
    }
    actions = acts.value.items.map((item, index) => readAction(item, index + 1, label));
  }
  return { number, line: node.line, name, expressions, actions };
}

function readName(rule: MapNode, number: number): string | null {
  const entry = field(rule, 'name');
  if (!entry) return null;
  if (entry.value.kind !== 'scalar' || typeof entry.value.value !== 'string') {
    fail(
      CODES.malformed,
      `Rule ${number}, line ${entry.line}: name must be a string, but it is ${kindOf(scalarOrKind(entry.value))}.`,
    );
  }
  const bytes = utf8Bytes(entry.value.value);
  if (bytes > MAX_RULE_NAME_BYTES) {
    fail(
      CODES.malformed,
      `Rule ${number}, line ${entry.line}: name is ${bytes} bytes long; a rule name may be at most ${MAX_RULE_NAME_BYTES} bytes.`,
    );
  }
  return entry.value.value;
}

function readAction(node: TreeNode, number: number, ruleText: string): RawAction {
  const label = `${ruleText}, action ${number}`;
  if (node.kind !== 'map') {
    fail(
      CODES.malformed,
      `${label}, line ${node.line}: an action must be a mapping with the keys type and config, but it is ${kindOf(scalarOrKind(node))}.`,
    );
  }
  rejectUnknownKeys(node, ACTION_KEYS, (key, line) =>
    `${label}, line ${line}: the key ${quoted(key, 32)} is not allowed in an action; an action has only the keys type and config.`,
  );
  const type = field(node, 'type');
  if (!type) {
    fail(CODES.malformed, `${label}, line ${node.line}: the action has no type; add one, for example "type: deny".`);
  }
  if (type.value.kind !== 'scalar' || typeof type.value.value !== 'string') {
    fail(
      CODES.malformed,
      `${label}, line ${type.line}: type must be a string, but it is ${kindOf(scalarOrKind(type.value))}.`,
    );
  }
  const config = field(node, 'config');
  return {
    number,
    line: node.line,
    type: type.value.value,
    config: config && !isNull(config.value) ? config.value : null,
    configLine: config ? config.line : node.line,
  };
}

export function field(node: MapNode, key: string): { line: number; value: TreeNode } | undefined {
  return node.entries.find((entry) => entry.key === key);
}

export function rejectUnknownKeys(
  node: MapNode,
  allowed: readonly string[],
  message: (key: string, line: number) => string,
  code: typeof CODES.malformed | typeof CODES.configMalformed = CODES.malformed,
): void {
  for (const entry of node.entries) if (!allowed.includes(entry.key)) fail(code, message(entry.key, entry.line));
}

export function isNull(node: TreeNode): boolean {
  return node.kind === 'scalar' && node.value === null;
}

/** A value for kindOf(): the scalar itself, or a stand-in of the collection's kind. */
export function scalarOrKind(node: TreeNode): unknown {
  if (node.kind === 'scalar') return node.value;
  return node.kind === 'seq' ? [] : {};
}

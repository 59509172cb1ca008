/**
 * YAML 1.2 / JSON text → a small tree of plain nodes that remember their line. JSON is read as
 * YAML (it is a subset of YAML 1.2 in practice). Every failure here is ERR_NGROK_2236 and names
 * the 1-based line where the problem was found.
 */
import { Composer, LineCounter, Parser, isAlias, isMap, isPair, isScalar, isSeq } from 'yaml';
import type { CST, Document, DocumentOptions, Node as YamlNode, ParseOptions, ParsedNode, SchemaOptions } from 'yaml';
import { CODES, fail, quoted } from './problem.js';
import { MAX_ALIASES, MAX_ALIAS_EXPANSION_NODES, MAX_NESTING_DEPTH } from './limits.js';

export type Scalar = string | number | boolean | null;

export interface MapNode {
  kind: 'map';
  line: number;
  entries: MapEntry[];
}

export interface MapEntry {
  key: string;
  /** Line of the key: where a user looks for "the key". */
  line: number;
  value: TreeNode;
}

export interface SeqNode {
  kind: 'seq';
  line: number;
  items: TreeNode[];
}

export interface ScalarNode {
  kind: 'scalar';
  line: number;
  value: Scalar;
}

export type TreeNode = MapNode | SeqNode | ScalarNode;

const PARSE_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.2',
  // Core schema only: no custom or YAML 1.1 tags (!!binary, !!timestamp, !!set, …), no `<<` merges.
  schema: 'core',
  customTags: [],
  resolveKnownTags: false,
  merge: false,
  uniqueKeys: true,
  strict: true,
  intAsBigInt: false,
  prettyErrors: false,
  // Not 'silent': the composer only reports a second document when logging is on. 'error' never prints.
  logLevel: 'error',
};

const PREFIX = 'The traffic policy could not be parsed';

/** Returns the document's root, or null for an empty document (only whitespace/comments/`~`). */
export function parseTree(source: string): TreeNode | null {
  const lines = new LineCounter();
  const lineOf = (offset: number): number => Math.max(1, lines.linePos(offset).line);

  precheckNesting(source);
  // The CST parser is iterative, so nesting is measured here before the recursive composer runs.
  const tokens = [...new Parser(lines.addNewLine).parse(source)];
  checkNesting(tokens, lineOf);

  const docs: Document.Parsed[] = [];
  for (const doc of new Composer(PARSE_OPTIONS).compose(tokens, true, source.length)) {
    docs.push(doc);
    if (docs.length > 1) break;
  }
  const doc = docs[0];
  if (!doc) return null;
  if (docs.length > 1) {
    const second = docs[1]!;
    fail(
      CODES.malformed,
      `${PREFIX} at line ${lineOf(second.range[0])}: a second YAML document starts there; a policy must be a single document.`,
    );
  }
  // Warnings are errors here: they are unresolved tags and bad directives, i.e. content we would
  // otherwise silently reinterpret.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    fail(CODES.malformed, `${PREFIX} at line ${lineOf(problem.pos[0])}: ${describeYamlError(problem, source)}`);
  }
  if (doc.contents === null) return null;
  return new TreeBuilder(lineOf).build(doc.contents);
}

function describeYamlError(error: { code: string; message: string; pos: [number, number] }, source: string): string {
  switch (error.code) {
    case 'DUPLICATE_KEY': {
      // The error marks only the key's first character; read the whole key as written.
      const written = /^(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\n]|'')*)'|([^:,{}[\]\n#]+))/.exec(source.slice(error.pos[0], error.pos[0] + 300));
      const key = (written?.[1] ?? written?.[2] ?? written?.[3] ?? '').trim();
      return key
        ? `the key ${quoted(key)} is given twice in the same mapping; each key may appear only once.`
        : 'a key is given twice in the same mapping; each key may appear only once.';
    }
    case 'TAG_RESOLVE_FAILED':
      return 'the document uses a YAML tag outside the YAML 1.2 core schema; remove the tag.';
    case 'BAD_DIRECTIVE':
      return 'the document starts with an unsupported directive; remove it (policies are YAML 1.2).';
    default: {
      // The library's own messages are short and do not quote the input; still keep them bounded.
      const text = error.message.replace(/\s+/g, ' ').trim().slice(0, 160);
      return `${text.charAt(0).toLowerCase()}${text.slice(1)}${/[.!?]$/.test(text) ? '' : '.'}`;
    }
  }
}

/**
 * A linear pre-scan that rejects absurd nesting before the CST parser, whose cost grows faster
 * than linearly with depth (about 300 ms for a 64 KiB "[[[[…"). It over-approximates: brackets
 * in plain or block scalars count too, so it only fires far above the real limit, which
 * checkNesting then enforces exactly. Misreading a quote can only make it miss, never reject.
 */
function precheckNesting(source: string): void {
  const limit = MAX_NESTING_DEPTH * 4;
  let flow = 0;
  let lineStart = true;
  let indicators = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\n') {
      lineStart = true;
      indicators = 0;
      continue;
    }
    if (lineStart) {
      // "- - - x" nests block sequences on one line; so does "? ? x" for keys.
      if ((c === '-' || c === '?') && /[ \t\n]|^$/.test(source[i + 1] ?? '')) {
        if (++indicators > limit) tooDeep(source, i);
        continue;
      }
      if (c !== ' ' && c !== '\t') lineStart = false;
    }
    if (c === '"' || c === "'") {
      i = skipQuoted(source, i);
    } else if (c === '#' && (i === 0 || /\s/.test(source[i - 1]!))) {
      const end = source.indexOf('\n', i);
      i = (end < 0 ? source.length : end) - 1;
    } else if (c === '[' || c === '{') {
      if (++flow > limit) tooDeep(source, i);
    } else if ((c === ']' || c === '}') && flow > 0) {
      flow--;
    }
  }
}

/** Index of the closing quote of the quoted scalar opening at `open` (or the end). */
function skipQuoted(source: string, open: number): number {
  const quote = source[open]!;
  for (let i = open + 1; i < source.length; i++) {
    const c = source[i]!;
    if (quote === '"' && c === '\\') i++;
    else if (c === quote) {
      if (quote === "'" && source[i + 1] === "'") i++;
      else return i;
    }
  }
  return source.length;
}

function tooDeep(source: string, offset: number): never {
  let line = 1;
  for (let i = source.indexOf('\n'); i >= 0 && i < offset; i = source.indexOf('\n', i + 1)) line++;
  fail(CODES.malformed, `${PREFIX} at line ${line}: lists and mappings are nested more than ${MAX_NESTING_DEPTH} levels deep.`);
}

/** Rejects collections nested deeper than MAX_NESTING_DEPTH, walking the CST without recursion. */
function checkNesting(tokens: CST.Token[], lineOf: (offset: number) => number): void {
  const stack: Array<[CST.Token, number]> = tokens.map((t) => [t, 0]);
  while (stack.length > 0) {
    const [token, depth] = stack.pop()!;
    let inner = depth;
    if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') {
      inner = depth + 1;
      if (inner > MAX_NESTING_DEPTH) {
        fail(
          CODES.malformed,
          `${PREFIX} at line ${lineOf(token.offset)}: lists and mappings are nested more than ${MAX_NESTING_DEPTH} levels deep.`,
        );
      }
      for (const item of token.items) {
        if (item.key) stack.push([item.key, inner]);
        if (item.value) stack.push([item.value, inner]);
      }
    } else if (token.type === 'document' && token.value) {
      stack.push([token.value, 0]);
    }
  }
}

/** Converts the composed YAML nodes, resolving aliases under a budget. */
class TreeBuilder {
  private readonly anchors = new Map<string, YamlNode>();
  private readonly inProgress = new Set<YamlNode>();
  private aliases = 0;
  private expanded = 0;
  private aliasDepth = 0;

  constructor(private readonly lineOf: (offset: number) => number) {}

  build(node: ParsedNode): TreeNode {
    return this.convert(node, 0, 1);
  }

  private convert(node: unknown, depth: number, fallbackLine: number): TreeNode {
    // `key:` with nothing after it may come without a node at all.
    if (node === null || node === undefined) return { kind: 'scalar', line: fallbackLine, value: null };
    const yamlNode = node as YamlNode;
    const line = yamlNode.range ? this.lineOf(yamlNode.range[0]) : fallbackLine;

    if (isAlias(yamlNode)) return this.expandAlias(yamlNode.source, depth, line);

    if (this.aliasDepth > 0 && ++this.expanded > MAX_ALIAS_EXPANSION_NODES) {
      fail(
        CODES.malformed,
        `${PREFIX} at line ${line}: aliases expand to more than ${MAX_ALIAS_EXPANSION_NODES} nodes; write the repeated parts out or use fewer aliases.`,
      );
    }
    const anchor = (yamlNode as { anchor?: string }).anchor;
    if (anchor && this.aliasDepth === 0) this.anchors.set(anchor, yamlNode);

    if (isScalar(yamlNode)) return { kind: 'scalar', line, value: this.scalarValue(yamlNode.value, line) };
    // `depth` counts the collections around this one; aliases can nest deeper than the text shows.
    if (depth >= MAX_NESTING_DEPTH) {
      fail(CODES.malformed, `${PREFIX} at line ${line}: lists and mappings are nested more than ${MAX_NESTING_DEPTH} levels deep.`);
    }

    this.inProgress.add(yamlNode);
    try {
      if (isSeq(yamlNode)) {
        return { kind: 'seq', line, items: yamlNode.items.map((item) => this.convert(item, depth + 1, line)) };
      }
      if (isMap(yamlNode)) {
        const entries: MapEntry[] = [];
        for (const pair of yamlNode.items) {
          if (!isPair(pair)) continue;
          const keyNode = pair.key as YamlNode | null;
          const keyLine = keyNode?.range ? this.lineOf(keyNode.range[0]) : line;
          const key = this.convert(keyNode, depth + 1, keyLine);
          if (key.kind !== 'scalar' || typeof key.value !== 'string') {
            const shown = key.kind === 'scalar' && key.value !== null ? ` (${quoted(String(key.value))})` : '';
            fail(
              CODES.malformed,
              `${PREFIX} at line ${keyLine}: every key must be a string, but this key is ${describeKey(key)}${shown}; quote it if it is meant as text.`,
            );
          }
          entries.push({ key: key.value, line: keyLine, value: this.convert(pair.value, depth + 1, keyLine) });
        }
        return { kind: 'map', line, entries };
      }
    } finally {
      this.inProgress.delete(yamlNode);
    }
    fail(CODES.malformed, `${PREFIX} at line ${line}: this kind of YAML node is not supported.`);
  }

  private expandAlias(name: string, depth: number, line: number): TreeNode {
    if (++this.aliases > MAX_ALIASES) {
      fail(CODES.malformed, `${PREFIX} at line ${line}: the document uses more than ${MAX_ALIASES} aliases.`);
    }
    const target = this.anchors.get(name);
    if (!target) {
      fail(CODES.malformed, `${PREFIX} at line ${line}: the alias *${name.slice(0, 48)} refers to no anchor defined before it.`);
    }
    if (this.inProgress.has(target)) {
      fail(CODES.malformed, `${PREFIX} at line ${line}: the alias *${name.slice(0, 48)} refers to a node that contains the alias itself.`);
    }
    this.aliasDepth++;
    try {
      // Lines inside an expansion point at the anchored original, which is where a user would fix it.
      return this.convert(target, depth, line);
    } finally {
      this.aliasDepth--;
    }
  }

  private scalarValue(value: unknown, line: number): Scalar {
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      return value;
    }
    // The core schema yields nothing else; anything else means a tag slipped through.
    fail(CODES.malformed, `${PREFIX} at line ${line}: this value has a type that a policy cannot hold.`);
  }
}

function describeKey(key: TreeNode): string {
  if (key.kind === 'map') return 'a mapping';
  if (key.kind === 'seq') return 'a list';
  if (key.value === null) return 'empty (null)';
  return `a ${typeof key.value}`;
}

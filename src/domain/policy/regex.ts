/**
 * CEL `matches` with RE2 semantics, in time linear in the input (re2js), for validation and
 * evaluation alike.
 *
 * cel-js implements `string.matches(string)` with the backtracking `RegExp`, where
 * `'aaa…a!'.matches('^(a+)+$')` takes exponential time, and a registered overload cannot replace
 * a built-in one (cel-js refuses overlapping signatures). What it does allow is a macro: the
 * parser hands every method call `x.matches(y)` to the macro registered under that name and
 * argument count, whatever the receiver, before any overload is looked at. The macro below is
 * declared on a receiver no policy can produce for `matches` (`bytes`), so its declaration does not
 * overlap the built-in one, and it takes over the call for every receiver type: it type-checks
 * `string.matches(string): bool` itself and evaluates with RE2. The built-in overload is never
 * reached from a policy.
 *
 * A literal pattern is compiled once, when the expression is parsed; one RE2 cannot compile
 * (backreferences, lookaround, …) fails the type check, so the policy is refused at validation.
 * A pattern computed at run time is compiled on first use (and cached); if RE2 refuses it, the
 * call is a run-time error, which makes the expression false.
 */
import { RE2JS } from 're2js';
import type { Environment } from '@marcbachmann/cel-js';
import { quoted } from './problem.js';

/** The part of cel-js's AST node a macro touches. */
interface CelNode {
  op: string;
  args: unknown;
}

interface CelTypeDecl {
  type: string;
  kind: string;
  name: string;
}

interface CelChecker {
  check(node: CelNode, ctx: unknown): CelTypeDecl;
  createError(code: string, message: string, node: unknown): Error;
  boolType: CelTypeDecl;
}

interface CelEvaluator {
  run(node: CelNode, ctx: unknown): unknown;
}

interface MatchesMacro {
  ast: CelNode;
  receiver: CelNode;
  pattern: CelNode;
  /** The compiled literal pattern, or why RE2 refused it; undefined for a computed pattern. */
  literal: Compiled | undefined;
  typeCheck(checker: CelChecker, macro: MatchesMacro, ctx: unknown): CelTypeDecl;
  evaluate(evaluator: CelEvaluator, macro: MatchesMacro, ctx: unknown): unknown;
}

type Compiled = { ok: true; re: RE2JS } | { ok: false; reason: string };

/** Error code of a pattern RE2 refuses (at validation for a literal, at run time otherwise). */
export const INVALID_REGEX_CODE = 'invalid_regular_expression';

/** Compiled run-time patterns; a policy rarely computes more than a handful of distinct ones. */
const DYNAMIC_CACHE_SIZE = 256;
const dynamicCache = new Map<string, Compiled>();

/** Compiles `pattern` with RE2 syntax; never throws. */
export function compileRe2(pattern: string): Compiled {
  try {
    return { ok: true, re: RE2JS.compile(pattern) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: message.replace(/^error parsing regexp: /, '') };
  }
}

function compileDynamic(pattern: string): Compiled {
  let compiled = dynamicCache.get(pattern);
  if (compiled === undefined) {
    compiled = compileRe2(pattern);
    if (dynamicCache.size >= DYNAMIC_CACHE_SIZE) dynamicCache.delete(dynamicCache.keys().next().value!);
    dynamicCache.set(pattern, compiled);
  }
  return compiled;
}

/** Why a pattern is refused, completing "the regular expression … is not supported: <this>". */
function refusal(pattern: string, reason: string): string {
  return `the regular expression ${quoted(pattern)} is not valid RE2 syntax (${reason}); matches() uses RE2, which has no backreferences or lookaround.`;
}

function isStringLiteral(node: CelNode): node is CelNode & { args: string } {
  return node.op === 'value' && typeof node.args === 'string';
}

/** Registers the RE2 `matches` on `env` (see the module comment). */
export function registerRe2Matches(env: Environment): void {
  env.registerFunction(
    'bytes.matches(ast): bool',
    ({ ast, args, receiver }: { ast: CelNode; args: CelNode[]; receiver: CelNode }): MatchesMacro => {
      const pattern = args[0]!;
      return {
        ast,
        receiver,
        pattern,
        literal: isStringLiteral(pattern) ? compileRe2(pattern.args) : undefined,
        typeCheck: checkMatches,
        evaluate: evaluateMatches,
      };
    },
    { description: 'string.matches(pattern): whether the string contains a match of the RE2 pattern (linear time).' },
  );
  // CEL's global form, matches(string, pattern), is the same function.
  env.registerFunction(
    'matches(ast, ast): bool',
    ({ ast, args }: { ast: CelNode; args: CelNode[] }): MatchesMacro => {
      const pattern = args[1]!;
      return {
        ast,
        receiver: args[0]!,
        pattern,
        literal: isStringLiteral(pattern) ? compileRe2(pattern.args) : undefined,
        typeCheck: checkMatches,
        evaluate: evaluateMatches,
      };
    },
    { description: 'matches(string, pattern): the same as string.matches(pattern).' },
  );
}

function checkMatches(checker: CelChecker, macro: MatchesMacro, ctx: unknown): CelTypeDecl {
  const receiverType = checker.check(macro.receiver, ctx);
  const patternType = checker.check(macro.pattern, ctx);
  const fits = (t: CelTypeDecl) => t.type === 'string' || t.kind === 'dyn';
  if (!fits(receiverType) || !fits(patternType)) {
    throw checker.createError(
      'no_matching_overload',
      `found no matching overload for '${receiverType.name}.matches(${patternType.name})'`,
      macro.ast,
    );
  }
  if (macro.literal && !macro.literal.ok) {
    throw checker.createError(INVALID_REGEX_CODE, refusal(macro.pattern.args as string, macro.literal.reason), macro.ast);
  }
  return checker.boolType;
}

function evaluateMatches(evaluator: CelEvaluator, macro: MatchesMacro, ctx: unknown): boolean {
  const subject = evaluator.run(macro.receiver, ctx);
  if (typeof subject !== 'string') throw new Error(`matches() needs a string receiver, got ${describe(subject)}`);
  let compiled = macro.literal;
  if (!compiled) {
    const pattern = evaluator.run(macro.pattern, ctx);
    if (typeof pattern !== 'string') throw new Error(`matches() needs a string pattern, got ${describe(pattern)}`);
    compiled = compileDynamic(pattern);
    if (!compiled.ok) throw new Error(refusal(pattern, compiled.reason));
  }
  if (!compiled.ok) throw new Error(compiled.reason); // unreachable: a checked literal compiled
  return compiled.re.test(subject);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'int';
  if (Array.isArray(value)) return 'a list';
  return typeof value;
}

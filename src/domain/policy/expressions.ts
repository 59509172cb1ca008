/**
 * Compiling CEL against the environment of the phase being validated (phases.ts): rule expressions (ERR_NGROK_2200, must be
 * bool) and `${...}` interpolations in config strings (ERR_NGROK_2224, any type).
 */
import { checkCel, describeCelType } from './environment.js';
import { scanInterpolations } from './interpolation.js';
import type { Interpolation } from './interpolation.js';
import { CODES, fail, quoted } from './problem.js';
import { currentPhase } from './phases.js';

/** `where` is a message prefix such as `Rule 1 ("x"), expression 2, line 4`. */
export function checkRuleExpression(where: string, expression: string): void {
  const result = checkCel(expression);
  if (!result.ok) {
    fail(
      CODES.celInvalid,
      `${where}: the expression ${quoted(expression)} is not valid in the ${currentPhase().name} phase: ${result.reason}`,
    );
  }
  if (result.type !== 'bool') {
    fail(
      CODES.celInvalid,
      `${where}: the expression ${quoted(expression)} has type ${describeCelType(result.type)}, but an expression must be of type bool (for example: conn.geo.country_code == 'US').`,
    );
  }
}

/**
 * Checks every `${...}` in a config string and returns them (empty when there is none).
 * `where` is a message prefix (`Rule 1, action 1, line 6`), `path` names the field
 * (`config.metadata.country`).
 */
export function checkInterpolations(where: string, path: string, text: string): Interpolation[] {
  const scan = scanInterpolations(text);
  if (!scan.ok) {
    fail(
      CODES.interpolation,
      `${where}: in ${path}, the interpolation starting at character ${scan.start + 1} of ${quoted(text)} has no closing "}".`,
    );
  }
  for (const part of scan.parts) {
    const result = checkCel(part.expression);
    if (!result.ok) {
      fail(
        CODES.interpolation,
        `${where}: in ${path}, the interpolation ${quoted('${' + part.expression + '}')} does not compile: ${result.reason}`,
      );
    }
  }
  return scan.parts;
}

/** Whether `text` is exactly one interpolation, e.g. "${conn.client_ip}"; the caller checked it compiles. */
export function isWholeInterpolation(text: string, parts: Interpolation[]): boolean {
  return parts.length === 1 && parts[0]!.start === 0 && parts[0]!.end === text.length;
}

/** The type a whole interpolation produces, for fields that need a particular one. */
export function interpolationType(part: Interpolation): string {
  const result = checkCel(part.expression);
  return result.ok ? result.type : 'dyn';
}

export { describeCelType };

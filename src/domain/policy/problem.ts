/**
 * Error codes and message helpers shared by the validator's parts. Internally the first
 * problem is thrown as a PolicyProblem and caught once in validatePolicy, which keeps each
 * check a straight line of code; nothing outside this module ever sees the exception.
 */

export const CODES = {
  celInvalid: 'ERR_NGROK_2200',
  unknownAction: 'ERR_NGROK_2201',
  actionNotAllowed: 'ERR_NGROK_2202',
  configMalformed: 'ERR_NGROK_2203',
  configInvalid: 'ERR_NGROK_2204',
  noActions: 'ERR_NGROK_2206',
  unreachable: 'ERR_NGROK_2207',
  invalidCidr: 'ERR_NGROK_2217',
  tooLarge: 'ERR_NGROK_2221',
  interpolation: 'ERR_NGROK_2224',
  phaseNotAllowed: 'ERR_NGROK_2230',
  malformed: 'ERR_NGROK_2236',
  tooManyRules: 'ERR_NGROK_2264',
} as const;

export type PolicyErrorCode = (typeof CODES)[keyof typeof CODES];

export class PolicyProblem extends Error {
  constructor(
    readonly code: PolicyErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyProblem';
  }
}

export function fail(code: PolicyErrorCode, message: string): never {
  throw new PolicyProblem(code, message);
}

const encoder = new TextEncoder();

export function utf8Bytes(text: string): number {
  // Counting without encoding would be faster, but this is only used on short strings and on the
  // whole document once; TextEncoder counts lone surrogates as U+FFFD (3 bytes), as the wire does.
  return encoder.encode(text).length;
}

/**
 * A user-supplied string as it may appear in a message: JSON-quoted (so control characters are
 * visible and cannot forge lines) and cut to `max` code points, never splitting a surrogate pair.
 */
export function quoted(text: string, max = 48): string {
  const points = Array.from(text);
  const shown = points.length > max ? `${points.slice(0, max).join('')}…` : text;
  return JSON.stringify(shown);
}

/** A short description of a YAML value's kind, for "expected X, found Y" messages. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return 'a mapping';
  }
}

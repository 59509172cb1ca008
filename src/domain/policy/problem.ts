/**
 * Error codes and message helpers shared by the validator's parts. Internally the first
 * problem is thrown as a PolicyProblem and caught once in validatePolicy, which keeps each
 * check a straight line of code; nothing outside this module ever sees the exception.
 */

import { quote, utf8Bytes } from '../text.js';

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

/** The engine's codes, and an action's own (jwt-validation's ERR_NGROK_71xx). */
export type PolicyErrorCode = (typeof CODES)[keyof typeof CODES] | `ERR_NGROK_${number}`;

export class PolicyProblem extends Error {
  constructor(
    readonly code: PolicyErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'PolicyProblem';
  }
}

/** What messages call the policy's owner; set around one (synchronous) validation by withSubject. */
const SUBJECTS = { edge: 'a TLS edge', endpoint: 'a burrow endpoint' } as const;
let subject: keyof typeof SUBJECTS = 'edge';

export function subjectNoun(): string {
  return SUBJECTS[subject];
}

export function withSubject<T>(value: keyof typeof SUBJECTS | undefined, work: () => T): T {
  const outer = subject;
  subject = value ?? 'edge';
  try {
    return work();
  } finally {
    subject = outer;
  }
}

export function fail(code: PolicyErrorCode, message: string): never {
  throw new PolicyProblem(code, message);
}

/** Policy messages quote at most this many code points of a value (the rest of the API 64). */
const QUOTE_MAX_CHARS = 48;

export { utf8Bytes };

/** quote() with the policy messages' default length. */
export const quoted = (text: string, max = QUOTE_MAX_CHARS): string => quote(text, max);

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

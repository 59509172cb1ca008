import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Format from 'typebox/format';
import { errors, type ApiError } from '../../domain/errors.js';

/**
 * Request validation by TypeBox's compiler, from each route's own schema, answered in SPEC §2's
 * words rather than the validator's: unknown fields are refused (214, never dropped), `null`
 * means "not provided", and every failure names the field (215). Works for any route schema:
 * nothing here knows a route.
 *
 * The route schema is what `/openapi.json` publishes. The validator checks a copy of it, derived
 * once per route (`forValidation`): `T | null` becomes `T` (nulls are dropped beforehand), every
 * string that is a field gets the `stored-text` format, and a node carrying `x-error-code`
 * keeps its constraint keywords out of the copy, because SPEC answers that limit with its own
 * code from the domain rule that owns it (the ACL's 600, the description's 604…).
 */
export type Validator = (value: unknown) => Record<string, unknown>;

type JsonSchema = {
  type?: string;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  required?: string[];
  format?: string;
  [keyword: string]: unknown;
};

/**
 * Both stores keep UTF-8 text: an unpaired surrogate would be altered and NUL refused by
 * PostgreSQL, so no string field may hold either. List elements are exempt: lists hold ACL
 * rules and hostports, whose grammars admit only printable ASCII and say so in their own words.
 */
const STORED_TEXT = 'stored-text';
Format.Set(STORED_TEXT, (value) => value.isWellFormed() && !value.includes('\u0000'));

/** Constraint keywords: where SPEC gives a limit its own error code, the domain rule enforces it. */
const CONSTRAINTS = [
  'maxItems', 'minItems', 'uniqueItems', 'maxLength', 'minLength', 'pattern', 'format',
  'maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum', 'multipleOf', 'maxProperties', 'minProperties',
];

export function compileBodyValidator(schema: TSchema): Validator {
  const root = forValidation(schema as JsonSchema, false);
  if (root.type !== 'object') throw new Error('A body schema must be an object schema.');
  const validator = Compile(root as TSchema);
  return (value) => {
    const body = value ?? {};
    if (!isRecord(body)) throw errors.bodyNotObject();
    const input = withoutNulls(body, root);
    if (validator.Check(input)) return input;
    throw answerFor(validator.Errors(input), input, root);
  };
}

/** The copy the validator checks (see the module comment). */
function forValidation(schema: JsonSchema, inList: boolean, owned = false): JsonSchema {
  if (schema.anyOf) {
    const variants = schema.anyOf.filter((variant) => variant.type !== 'null');
    if (variants.length === 1 && schema.anyOf.length === 2) return forValidation({ ...variants[0]!, ...pick(schema) }, inList, owned);
    return { ...schema, anyOf: schema.anyOf.map((variant) => forValidation(variant, inList, owned)) };
  }
  const copy: JsonSchema = { ...schema };
  const domainOwned = owned || schema['x-error-code'] !== undefined;
  if (domainOwned) for (const keyword of CONSTRAINTS) delete copy[keyword];
  if (schema.properties) {
    copy.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => [name, forValidation(property, false, false)]),
    );
  }
  if (schema.items) copy.items = forValidation(schema.items, true, domainOwned);
  if (schema.type === 'string' && !inList && copy.format === undefined) copy.format = STORED_TEXT;
  return copy;
}

/** Keeps a nullable field's description and extensions when its union is unwrapped. */
function pick(schema: JsonSchema): JsonSchema {
  const { anyOf: _anyOf, ...rest } = schema;
  return rest;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * SPEC §1: `null` for a known field means "not provided", at any depth. An unknown field keeps
 * its null so that it is refused as unknown. Object.fromEntries defines keys such as
 * `__proto__` as plain own properties.
 */
function withoutNulls(value: Record<string, unknown>, schema: JsonSchema): Record<string, unknown> {
  const properties = schema.properties ?? {};
  const entries: [string, unknown][] = [];
  for (const [key, given] of Object.entries(value)) {
    const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (property && given === null) continue;
    entries.push([key, property?.type === 'object' && isRecord(given) ? withoutNulls(given, property) : given]);
  }
  return Object.fromEntries(entries);
}

interface ValidationError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
}

/**
 * The one error answered: unknown fields of an object before its fields, and fields in the
 * order the schema declares them (TypeBox lists a missing required field first, and stops at
 * eight errors, which every body with fewer faults fits).
 */
function answerFor(found: readonly ValidationError[], input: unknown, root: JsonSchema): ApiError {
  const located = found
    .filter((error) => error.keyword !== 'boolean') // additionalProperties: false, also reported below
    .map((error) => ({ error, ...locate(error, root) }));
  if (located.length === 0) return errors.invalidField('', 'is not valid');
  located.sort((a, b) => compareOrder(a.order, b.order));
  const { error, segments } = located[0]!;
  return describeError(error, segments, input, root);
}

/** The error's field as path segments, and its place in declaration order. */
function locate(error: ValidationError, root: JsonSchema): { segments: string[]; order: number[] } {
  const segments = error.instancePath === '' ? [] : error.instancePath.slice(1).split('/').map(unescapePointer);
  if (error.keyword === 'required') segments.push(String((error.params.requiredProperties as string[])[0]));
  const order: number[] = [];
  let schema: JsonSchema | undefined = root;
  for (const segment of segments) {
    const names = Object.keys(schema?.properties ?? {});
    order.push(names.length > 0 ? names.indexOf(segment) : Number(segment) || 0);
    schema = schema?.properties?.[segment] ?? schema?.items;
  }
  if (error.keyword === 'additionalProperties') order.push(-1);
  return { segments, order };
}

function compareOrder(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

function describeError(error: ValidationError, segments: string[], input: unknown, root: JsonSchema): ApiError {
  const walk = (count: number) => {
    let schema: JsonSchema | undefined = root;
    let value: unknown = input;
    for (const segment of segments.slice(0, count)) {
      schema = schema?.properties?.[segment] ?? schema?.items;
      value = (value as Record<string, unknown> | undefined)?.[segment];
    }
    return { schema: schema ?? {}, value };
  };
  const name = (count: number) => segments.slice(0, count).join('.');

  // A map (`additionalProperties` a schema, such as labels): a bad entry is the map's fault.
  const mapAt = error.keyword === 'additionalProperties' ? segments.length : segments.length - 1;
  const entry = mapAt >= 0 ? walk(mapAt).schema.additionalProperties : undefined;
  if (typeof entry === 'object' && entry !== null) {
    return errors.invalidField(name(mapAt), `must be a map of ${plural(entry as JsonSchema)}, such as {"env": "prod"}`);
  }
  if (error.keyword === 'additionalProperties') {
    const unknown = String((error.params.additionalProperties as string[])[0]);
    return errors.unknownField(name(segments.length) === '' ? unknown : `${name(segments.length)}.${unknown}`, Object.keys(walk(segments.length).schema.properties ?? {}));
  }
  if (error.keyword === 'required') return errors.invalidField(name(segments.length), 'is required');

  // An element of a list is reported on the list, by position.
  const parent = segments.length > 0 ? walk(segments.length - 1) : undefined;
  if (parent && Array.isArray(parent.value) && error.keyword === 'type') {
    const index = Number(segments.at(-1));
    return errors.invalidField(
      name(segments.length - 1),
      `must be a list of ${plural(parent.schema.items)}, but element ${index + 1} is ${describe(parent.value[index])}`,
    );
  }
  const { schema, value } = walk(segments.length);
  return errors.invalidField(name(segments.length), problem(error, schema, value));
}

/** SPEC-worded problem for one failed keyword, after "The field "x" …". */
function problem(error: ValidationError, schema: JsonSchema, value: unknown): string {
  const limit = error.params.limit as number;
  switch (error.keyword) {
    case 'type':
      switch (schema.type) {
        case 'string':
          return `must be a string, not ${describe(value)}`;
        case 'boolean':
          return `must be true or false, not ${describe(value)}`;
        case 'integer':
          return `must be a whole number, not ${describe(value)}`;
        case 'number':
          return `must be a number, not ${describe(value)}`;
        case 'array':
          return `must be a list of ${plural(schema.items)}`;
        case 'object':
          return `must be an object, not ${describe(value)}`;
        case 'null':
          // A known field that only null may fill: a module of the reference API burrow does not serve.
          return 'names a module that burrow does not serve; send null or leave it out';
        default:
          return `must be of type ${String(schema.type)}`;
      }
    case 'format':
      if (error.params.format === STORED_TEXT) {
        return typeof value === 'string' && !value.isWellFormed()
          ? 'must be valid Unicode text (it has an unpaired surrogate)'
          : 'must not contain the NUL character';
      }
      return `must be a valid ${String(error.params.format)}`;
    case 'maxItems':
      return `may hold at most ${limit} entries, but ${(value as unknown[]).length} were given`;
    case 'minItems':
      return `must hold at least ${limit} ${limit === 1 ? 'entry' : 'entries'}`;
    case 'maxLength':
      return `may be at most ${limit} characters long`;
    case 'minLength':
      return `must be at least ${limit} ${limit === 1 ? 'character' : 'characters'} long`;
    case 'pattern':
      return `must match the pattern ${String(error.params.pattern)}`;
    case 'maximum':
      return `must be at most ${limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${limit}`;
    case 'minimum':
      return `must be at least ${limit}`;
    case 'exclusiveMinimum':
      return `must be greater than ${limit}`;
    case 'enum':
    case 'const':
      return 'is not one of the accepted values';
    default:
      return 'is not valid';
  }
}

function plural(items: JsonSchema | undefined): string {
  switch (items?.type) {
    case 'string':
      return 'strings';
    case 'object':
      return 'objects';
    case 'integer':
      return 'whole numbers';
    case 'number':
      return 'numbers';
    default:
      return 'values';
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return typeof value === 'boolean' ? 'a boolean' : `a ${typeof value}`;
}

/** A parsed query string: one string per parameter, or several when it was repeated. */
export type RawQuery = Record<string, string | string[]>;

/** Parses a query string without prototype keys; repeated parameters become arrays. */
export function parseQueryString(text: string): RawQuery {
  const query: RawQuery = Object.create(null) as RawQuery;
  for (const [name, value] of new URLSearchParams(text)) {
    const previous = query[name];
    if (previous === undefined) query[name] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else query[name] = [previous, value];
  }
  return query;
}

/**
 * SPEC §2 step 6: unknown parameters first (231), then repeated ones (232). The values are the
 * handler's to read (`limit` and `before_id` have codes of their own, 244 and 227).
 */
export function compileQueryValidator(schema: TSchema | undefined): (query: RawQuery) => Record<string, string> {
  const names = Object.keys((schema as JsonSchema | undefined)?.properties ?? {});
  const known = new Set(names);
  return (query) => {
    const keys = Object.keys(query);
    for (const key of keys) if (!known.has(key)) throw errors.unknownQueryParameter(key, names);
    const output: Record<string, string> = {};
    for (const key of keys) {
      const value = query[key]!;
      if (Array.isArray(value)) throw errors.repeatedQueryParameter(key);
      output[key] = value;
    }
    return output;
  };
}

import type { TSchema } from 'typebox';
import { errors, quote } from '../../domain/errors.js';

/**
 * Request validation driven by each route's TypeBox schema, with SPEC §2's answers instead of
 * Ajv's: unknown fields are rejected (never silently dropped), `null` means "not provided", and
 * each failure names the field. Only the JSON Schema subset the routes use is understood; a
 * route using anything else fails at start, not at request time.
 */
export type Validator = (value: unknown) => Record<string, unknown>;

type JsonSchema = {
  type?: string;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema;
  required?: string[];
  [keyword: string]: unknown;
};

type Check = (value: unknown, path: string) => unknown;

export function compileBodyValidator(schema: TSchema): Validator {
  const root = schema as JsonSchema;
  if (root.type !== 'object') throw new Error('A body schema must be an object schema.');
  const check = compileObject(root);
  return (value) => check(value ?? {}, '') as Record<string, unknown>;
}

function compile(schema: JsonSchema): Check {
  if (schema.anyOf) return compileNullable(schema);
  switch (schema.type) {
    case 'string':
      return checkString;
    case 'boolean':
      return (value, path) => {
        if (typeof value !== 'boolean') throw errors.invalidField(path, `must be true or false, not ${describe(value)}`);
        return value;
      };
    case 'array':
      return compileArray(schema);
    case 'object':
      return typeof schema.additionalProperties === 'object' ? compileStringMap(schema) : compileObject(schema);
    case 'null':
      // A known field that only null may fill (an edge module burrow does not serve): the
      // enclosing object already treats null as absent, so any value reaching here is refused.
      return (_value, path) => {
        throw errors.invalidField(path, `names a module that burrow does not serve; send null or leave it out`);
      };
    default:
      throw new Error(`Unsupported schema type in a request schema: ${String(schema.type)}`);
  }
}

/** `T | null`: null is treated as absent by the enclosing object. */
function compileNullable(schema: JsonSchema): Check {
  const variants = schema.anyOf!.filter((variant) => variant.type !== 'null');
  if (variants.length !== 1 || schema.anyOf!.length !== 2) throw new Error('Only `T | null` unions are supported.');
  return compile(variants[0]!);
}

function checkString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw errors.invalidField(path, `must be a string, not ${describe(value)}`);
  // Both stores keep UTF-8 text: an unpaired surrogate would be altered and NUL refused by
  // PostgreSQL, so neither is accepted anywhere.
  if (!value.isWellFormed()) throw errors.invalidField(path, 'must be valid Unicode text (it has an unpaired surrogate)');
  if (value.includes('\u0000')) throw errors.invalidField(path, 'must not contain the NUL character');
  return value;
}

/**
 * Lists in request bodies are lists of strings (ACL rules, hostports). Their elements are not
 * held to checkString's text rules: both grammars admit only printable ASCII, so a NUL or an
 * unpaired surrogate is an invalid rule (ERR_NGROK_600) or hostport, reported as such.
 */
function compileArray(schema: JsonSchema): Check {
  if (schema.items?.type !== 'string') throw new Error('Only lists of strings are supported in request schemas.');
  return (value, path) => {
    if (!Array.isArray(value)) throw errors.invalidField(path, 'must be a list of strings');
    for (let index = 0; index < value.length; index++) {
      const element: unknown = value[index];
      if (typeof element !== 'string') {
        throw errors.invalidField(path, `must be a list of strings, but element ${index + 1} is ${describe(element)}`);
      }
    }
    return value as string[];
  };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return typeof value === 'boolean' ? 'a boolean' : `a ${typeof value}`;
}

/**
 * A map of strings (a tunnel group's labels): any key, every value a string. Keys are the
 * caller's data, so the result is built with Object.fromEntries (a `__proto__` key stays a key);
 * what keys and values may be is the domain's rule.
 */
function compileStringMap(schema: JsonSchema): Check {
  if (schema.properties || (schema.additionalProperties as JsonSchema).type !== 'string') {
    throw new Error('Only maps of strings (additionalProperties: string, no properties) are supported in request schemas.');
  }
  return (value, path) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw errors.invalidField(path, `must be an object of string values, not ${describe(value)}`);
    }
    const entries = Object.entries(value);
    for (const [key, entry] of entries) {
      // Not checkString's text rules: the label grammar admits only printable ASCII anyway.
      if (typeof entry !== 'string') throw errors.invalidField(path, `must map each key to a string, but ${quote(key)} maps to ${describe(entry)}`);
    }
    return Object.fromEntries(entries);
  };
}

function compileObject(schema: JsonSchema): Check {
  const names = Object.keys(schema.properties ?? {});
  const fields = names.map((name) => ({ name, check: compile(schema.properties![name]!) }));
  const known = new Set(names);
  const required = new Set(schema.required ?? []);
  for (const name of required) if (!known.has(name)) throw new Error(`Required field ${name} is not a property.`);

  return (value, path) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw path === '' ? errors.bodyNotObject() : errors.invalidField(path, `must be an object, not ${describe(value)}`);
    }
    const input = value as Record<string, unknown>;
    for (const key of Object.keys(input)) {
      if (!known.has(key)) throw errors.unknownField(path === '' ? key : `${path}.${key}`, names);
    }
    const output: Record<string, unknown> = {};
    for (const { name, check } of fields) {
      const fieldPath = path === '' ? name : `${path}.${name}`;
      const given = Object.prototype.hasOwnProperty.call(input, name) ? input[name] : undefined;
      if (given === undefined || given === null) {
        if (required.has(name)) throw errors.invalidField(fieldPath, 'is required');
        continue;
      }
      output[name] = check(given, fieldPath);
    }
    return output;
  };
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

/** SPEC §2 step 6: unknown parameters first (231), then repeated ones (232). */
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

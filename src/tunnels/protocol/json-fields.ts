/**
 * Reading the fields of the agent protocol's JSON messages (AGENT-PROTOCOL.md §5, §6): every
 * message family (auth-, bind-, tunnel-, command-messages.ts, proxy.ts) decodes with these.
 *
 * Key matching follows Go's encoding/json (which GO agents and the reference server use): an
 * exact match wins, else the last key equal ignoring ASCII case. Absent and `null` fields take
 * their zero value (Go leaves the field untouched on `null`). A present field of the wrong JSON
 * type is a `MessageDecodeError` (Go's Unmarshal fails likewise).
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export class MessageDecodeError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'MessageDecodeError';
  }
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The key of `obj` that `name` designates: exact, else the last one equal ignoring case. */
export function findKey(obj: JsonObject, name: string): string | undefined {
  if (Object.prototype.hasOwnProperty.call(obj, name)) return name;
  const lower = name.toLowerCase();
  let found: string | undefined;
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) found = k;
  return found;
}

/** The value of field `name` (any key case), or undefined when absent. */
export function getField(obj: JsonObject, name: string): JsonValue | undefined {
  const k = findKey(obj, name);
  return k === undefined ? undefined : obj[k];
}

export function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

export function bad(path: string, expected: string, v: unknown): MessageDecodeError {
  return new MessageDecodeError(path, `${path}: expected ${expected}, got ${typeName(v)}`);
}

export function str(o: JsonObject, name: string, path: string): string {
  const v = getField(o, name);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw bad(`${path}${name}`, 'a string', v);
  return v;
}

export function optStr(o: JsonObject, name: string, path: string): string | null {
  const v = getField(o, name);
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw bad(`${path}${name}`, 'a string or null', v);
  return v;
}

export function bool(o: JsonObject, name: string, path: string): boolean {
  const v = getField(o, name);
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw bad(`${path}${name}`, 'a boolean', v);
  return v;
}

export function optBool(o: JsonObject, name: string, path: string): boolean | null {
  const v = getField(o, name);
  if (v === undefined || v === null) return null;
  if (typeof v !== 'boolean') throw bad(`${path}${name}`, 'a boolean or null', v);
  return v;
}

export function int(o: JsonObject, name: string, path: string): number {
  const v = getField(o, name);
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(`${path}${name}`, 'an integer', v);
  return v;
}

export function obj(o: JsonObject, name: string, path: string): JsonObject | null {
  const v = getField(o, name);
  if (v === undefined || v === null) return null;
  if (!isJsonObject(v)) throw bad(`${path}${name}`, 'an object', v);
  return v;
}

export function strArray(o: JsonObject, name: string, path: string): string[] {
  const v = getField(o, name);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw bad(`${path}${name}`, 'an array of strings', v);
  return v as string[];
}

export function strMap(o: JsonObject, name: string, path: string): Record<string, string> {
  const m = obj(o, name, path);
  if (m === null) return {};
  const entries = Object.entries(m);
  for (const [k, v] of entries) if (typeof v !== 'string') throw bad(`${path}${name}.${k}`, 'a string', v);
  return Object.fromEntries(entries) as Record<string, string>;
}

export function requireObject(v: unknown, what: string): JsonObject {
  if (!isJsonObject(v)) throw new MessageDecodeError('', `${what} must be a JSON object, got ${typeName(v)}`);
  return v;
}

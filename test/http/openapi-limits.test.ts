// Generated from /openapi.json: for every operation and every constrained field it documents,
// a value just inside the constraint succeeds and one just past it gets SPEC's 400 (the field's
// `x-error-code`, or its list's, else ERR_NGROK_215) naming the field in details.param. A new
// route with a constraint is covered without a line here; a new kind of constraint, or a field
// whose valid values this file cannot build, fails until it is taught.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.js';
import { SqlInspectionRepository } from '../../src/storage/repositories/inspection.js';
import { createTestApp, json, type TestApp } from '../helpers/app.js';

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  $ref?: string;
  [keyword: string]: unknown;
};

interface Parameter {
  in: string;
  name: string;
  schema: Schema;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

/** A documented limit on one field, and how to build values around it. */
interface Case {
  operation: string;
  method: string;
  path: string;
  where: 'body' | 'query';
  /** Field path in the body (an element of a list is named by the list). */
  field: string[];
  keyword: string;
  limit: number;
  code: string;
  /** The request value (body object or query value) with the field at `size`. */
  build: (size: number) => unknown;
}

const HANDLED = new Set(['x-max-bytes', 'maxLength', 'maxItems', 'maximum', 'x-maximum']);
const UNHANDLED = ['minLength', 'minItems', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum', 'multipleOf', 'uniqueItems', 'enum'];

let t: TestApp;
let cases: Case[] = [];
/** The smallest valid create body of each collection, for making the parent of `/x/{id}/…` (made anew: names must differ). */
const parentBodies = new Map<string, () => Record<string, unknown>>();
before(async () => {
  t = await createTestApp({ MAX_POLICY_RULES: '25' });
  const doc = json<{ paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } }>(
    await t.call({ method: 'GET', url: '/openapi.json', key: null, version: false }),
  );
  cases = collect(doc.paths, doc.components.schemas);
  for (const [path, operations] of Object.entries(doc.paths)) {
    const schema = operations.post?.requestBody?.content['application/json']?.schema;
    if (schema) parentBodies.set(path, () => minimal(schema.$ref ? doc.components.schemas[schema.$ref.split('/').at(-1)!]! : schema));
  }
});
after(() => t.close());

function collect(paths: Record<string, Record<string, Operation>>, components: Record<string, Schema>): Case[] {
  const resolve = (schema: Schema): Schema => (schema.$ref ? components[schema.$ref.split('/').at(-1)!]! : schema);
  const found: Case[] = [];
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const operationName = `${method.toUpperCase()} ${path}`;
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'query') continue;
        for (const keyword of constraintsOf(parameter.schema, operationName, parameter.name)) {
          found.push({
            operation: operationName,
            method,
            path,
            where: 'query',
            field: [parameter.name],
            keyword,
            limit: parameter.schema[keyword] as number,
            code: (parameter.schema['x-error-code'] as string | undefined) ?? 'ERR_NGROK_215',
            build: (size) => String(size),
          });
        }
      }
      const body = operation.requestBody?.content['application/json']?.schema;
      if (body) walkBody(resolve(body), [], undefined, (schema, field, inherited, element) => {
        for (const keyword of constraintsOf(schema, operationName, field.join('.'))) {
          found.push({
            operation: operationName,
            method,
            path,
            where: 'body',
            field,
            keyword,
            limit: schema[keyword] as number,
            code: (schema['x-error-code'] as string | undefined) ?? inherited ?? 'ERR_NGROK_215',
            build: (size) => bodyWith(resolve(body), field, fieldValue(schema, field, keyword, size, element)),
          });
        }
      });
    }
  }
  return found;
}

/** The handled constraint keywords of a schema; an unhandled one fails the run. */
function constraintsOf(schema: Schema, operation: string, field: string): string[] {
  const nullOnly = JSON.stringify(schema.enum) === '[null]'; // a module burrow does not serve
  for (const keyword of UNHANDLED.filter((name) => !(nullOnly && name === 'enum'))) {
    assert.equal(schema[keyword], undefined, `${operation} ${field}: teach openapi-limits.test.ts the constraint ${keyword}`);
  }
  if (schema.pattern !== undefined) assert.ok(schema['x-maximum'] !== undefined, `${operation} ${field}: a pattern this test cannot build`);
  return Object.keys(schema).filter((keyword) => HANDLED.has(keyword));
}

/** Visits every field schema; list elements are reported with their list's path. */
function walkBody(
  schema: Schema,
  field: string[],
  inherited: string | undefined,
  visit: (schema: Schema, field: string[], inherited: string | undefined, element: boolean) => void,
): void {
  const code = (schema['x-error-code'] as string | undefined) ?? inherited;
  if (field.length > 0) visit(schema, field, inherited, false);
  for (const [name, property] of Object.entries(schema.properties ?? {})) walkBody(property, [...field, name], undefined, visit);
  if (schema.items) visit(schema.items, field, code, true);
}

/** The smallest valid body with `value` at `field` (required siblings filled in). */
function bodyWith(schema: Schema, field: string[], value: unknown): Record<string, unknown> {
  const body = minimal(schema);
  let cursor = body;
  let node = schema;
  field.forEach((name, index) => {
    node = node.properties![name]!;
    if (index === field.length - 1) cursor[name] = value;
    else cursor = (cursor[name] ??= minimal(node)) as Record<string, unknown>;
  });
  return body;
}

function minimal(schema: Schema): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const name of schema.required ?? []) {
    const property = schema.properties![name]!;
    // A required map (a tunnel group's labels) needs one entry to be valid.
    const map = typeof property.additionalProperties === 'object';
    value[name] = property.type === 'object' ? (map ? { a: 'b' } : minimal(property)) : stringOf(name, 0);
  }
  return value;
}

/** A value of the field with its constrained measure at `size`. */
function fieldValue(schema: Schema, field: string[], keyword: string, size: number, element: boolean): unknown {
  const name = field.at(-1)!;
  if (keyword === 'maxItems') return Array.from({ length: size }, (_, index) => elementOf(name, index));
  if (keyword === 'maximum') return size;
  const text = keyword === 'maxLength' ? 'é'.repeat(size) : stringOf(element ? `${name}[]` : name, size);
  return element ? [text] : text;
}

/** A valid element of a list, distinct per index. */
function elementOf(list: string, index: number): string {
  switch (list) {
    case 'acl':
      return `bind:app${index}.example.com`;
    case 'hostports':
      return `app${index}.example.com:443`;
    default:
      assert.fail(`openapi-limits.test.ts cannot build an element of the list ${list}`);
  }
}

/**
 * A valid value of exactly `bytes` bytes of UTF-8. Free text uses two-byte characters, so a
 * limit counted in characters would let the "past" value through.
 */
let reservedNames = 0;

function stringOf(name: string, bytes: number): string {
  switch (name) {
    case 'value':
    case 'policy': {
      // A valid policy document, padded with a YAML comment.
      const policy = 'on_tcp_connect:\n  - actions:\n      - type: deny\n#';
      return policy + utf8Filler(Math.max(0, bytes - Buffer.byteLength(policy)));
    }
    case 'acl[]': {
      // bind: and a domain of 63-character labels.
      let domain = '';
      const length = bytes - 'bind:'.length;
      while (domain.length < length) domain += domain.length === 0 ? 'a' : domain.length % 64 === 63 ? '.' : 'a';
      if (domain.endsWith('.')) domain = `${domain.slice(0, -2)}.b`;
      return `bind:${domain}`;
    }
    case 'domain':
      // a reserved domain: a name of its own each time, or the second create is 413
      return `limits${++reservedNames}.example.com`;
    default:
      return utf8Filler(Math.max(1, bytes));
  }
}

function utf8Filler(bytes: number): string {
  return (bytes % 2 === 1 ? 'a' : '') + 'é'.repeat(Math.floor(bytes / 2));
}

async function send(item: Case, size: number) {
  let url = item.path;
  if (url.includes('{id}')) url = url.replace('{id}', await createParent(item));
  const value = item.build(size);
  if (item.where === 'query') url += `?${item.field[0]}=${encodeURIComponent(String(value))}`;
  return t.call({ method: item.method.toUpperCase() as 'GET', url, ...(item.where === 'body' ? { body: value } : {}) });
}

/** `/x/{id}/…` needs an x: created by POST on `/x` with the smallest valid body of its schema. */
async function createParent(item: Case): Promise<string> {
  const collection = item.path.slice(0, item.path.indexOf('/{id}'));
  if (collection === '/endpoints') return endpointWithTraffic();
  const created = await t.call({ method: 'POST', url: collection, body: parentBodies.get(collection)?.() ?? {} });
  assert.equal(created.statusCode, 201, `${item.operation}: POST ${collection} {} to make a parent: ${created.body}`);
  return json<{ id: string }>(created).id;
}

/**
 * Endpoints are made by agents, not by POST: an endpoint id with one captured request stands in
 * for one (its requests are listed for as long as they are kept).
 */
async function endpointWithTraffic(): Promise<string> {
  const endpointId = newId('ep').id;
  const exchange = { method: 'GET', path: '/', status: 200, durationMs: 1, clientIp: '192.0.2.1', requestHeaders: {}, responseHeaders: {}, actions: [] };
  const createdAt = new Date().toISOString().slice(0, 19) + 'Z';
  await new SqlInspectionRepository(t.store).insertBatch([{ id: newId('req').id, accountId: t.admin.principal.accountId, endpointId, createdAt, ...exchange }]);
  return endpointId;
}

describe('every documented limit is the enforced one (generated from /openapi.json)', () => {
  it('finds the limits of SPEC §5, §6, §7 and §8 in the document', () => {
    const seen = new Set(cases.map((item) => `${item.operation} ${item.field.join('.')} ${item.keyword}`));
    for (const expected of [
      'POST /credentials description x-max-bytes',
      'POST /credentials metadata x-max-bytes',
      'POST /credentials acl maxItems',
      'POST /credentials acl x-max-bytes',
      'PATCH /credentials/{id} acl x-max-bytes',
      'GET /credentials limit x-maximum',
      'POST /edges/tls hostports maxItems',
      'POST /edges/tls traffic_policy.value x-max-bytes',
      'PUT /edges/tls/{id}/traffic_policy value x-max-bytes',
      'PUT /edges/tls/{id}/traffic_policy module.value x-max-bytes',
      'GET /edges/tls limit x-maximum',
    ]) {
      assert.ok(seen.has(expected), `${expected} among ${[...seen].join('; ')}`);
    }
    for (const item of cases.filter((found) => found.keyword === 'maxLength')) {
      assert.fail(`${item.operation} ${item.field.join('.')}: maxLength counts characters; is it not a byte limit?`);
    }
  });

  it('answers just past every limit with its SPEC error, and accepts just inside it', async () => {
    assert.ok(cases.length > 0);
    for (const item of cases) {
      const name = `${item.operation} ${item.field.join('.')} ${item.keyword}=${item.limit}`;
      const past = await send(item, item.limit + 1);
      assert.equal(past.statusCode, 400, `${name}, just past: ${past.body}`);
      const error = json<{ error_code?: string; details: Record<string, string> }>(past);
      assert.equal(error.error_code, item.code, `${name}, just past: ${past.body}`);
      assert.equal(error.details.param, item.field.join('.'), `${name}, just past: ${past.body}`);

      const inside = await send(item, item.limit);
      assert.ok(inside.statusCode >= 200 && inside.statusCode < 300, `${name}, just inside: ${inside.statusCode} ${inside.body}`);
    }
  });
});

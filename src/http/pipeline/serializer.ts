import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

/**
 * fast-json-stringify writes required properties before optional ones, which would move the
 * optional `description` and `metadata` after `owner_id`. SPEC §5.1 fixes the field order, so
 * the serializer gets the schemas without `required` and writes properties in declared order,
 * leaving out those that are undefined. The schemas themselves, and so OpenAPI, keep `required`.
 */
export function orderPreservingSerializerFactory() {
  const build = SerializerSelector();
  return (externalSchemas: unknown, options: unknown) => {
    const compile = build(withoutRequired(externalSchemas) as never, options as never);
    return (route: { schema: unknown } & Record<string, unknown>) => compile({ ...route, schema: withoutRequired(route.schema) } as never);
  };
}

function withoutRequired(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRequired);
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) if (key !== 'required') copy[key] = withoutRequired(inner);
  return copy;
}

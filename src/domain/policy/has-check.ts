/**
 * cel-js does not check the argument of `has()`: `has(conn.geo.foo)` passes its checker, where a
 * CEL type checker refuses a field its object type does not declare (as it refuses `conn.geo.foo`
 * itself). Walks the parsed tree for a `has()` whose selected field is not in the variables'
 * schema and describes the first one found; a map's keys (`actions.ngrok.log.metadata`) are free.
 */
type Schema = string | { readonly [field: string]: Schema };

interface Node {
  op: string;
  args: unknown;
}

export function unknownHasField(node: unknown, variables: { readonly [name: string]: Schema }): string | undefined {
  if (Array.isArray(node)) {
    for (const child of node) {
      const found = unknownHasField(child, variables);
      if (found) return found;
    }
    return undefined;
  }
  if (node === null || typeof node !== 'object' || !('op' in node)) return undefined;
  const { op, args } = node as Node;
  if (op === 'call' && Array.isArray(args) && args[0] === 'has' && Array.isArray(args[1])) {
    const path = selection(args[1][0]);
    if (path && path.length >= 2) {
      let schema: Schema | undefined = variables[path[0]!];
      for (let i = 1; i < path.length && schema !== undefined; i++) {
        const parent = path.slice(0, i).join('.');
        if (typeof schema === 'string') {
          if (schema.startsWith('map<')) break; // any key may be tested
          return `has() tests the field ${JSON.stringify(path[i])} of ${parent}, a value that has no fields.`;
        }
        if (!Object.hasOwn(schema, path[i]!)) {
          return `has() tests the field ${JSON.stringify(path[i])}, which ${parent} does not have (its fields: ${Object.keys(schema).join(', ')}).`;
        }
        schema = schema[path[i]!];
      }
    }
  }
  return unknownHasField(args, variables);
}

/** `a.b.c` as ['a', 'b', 'c'] when the node is a chain of field selections on a variable. */
function selection(node: unknown): string[] | undefined {
  if (node === null || typeof node !== 'object' || !('op' in node)) return undefined;
  const { op, args } = node as Node;
  if (op === 'id' && typeof args === 'string') return [args];
  if (op === '.' && Array.isArray(args) && typeof args[1] === 'string') {
    const base = selection(args[0]);
    return base ? [...base, args[1]] : undefined;
  }
  return undefined;
}

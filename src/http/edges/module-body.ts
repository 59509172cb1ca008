import { errors } from '../../domain/errors.js';

/** Either form of a module's PUT body; K names the module's required field (a string). */
type PutBody<K extends string> = { id?: string | null; module?: ({ enabled?: boolean | null } & Record<K, string>) | null; enabled?: boolean | null } & {
  [F in K]?: string | null;
};

/**
 * The body of a module's PUT (SPEC §7.2): the module itself (Python client, docs), or the
 * npm/Rust/Java wrapper `{id, module}` whose id must match the path. Returns the module and
 * `field`, the name under which the service reports a bad value of K.
 */
export function moduleOfPutBody<K extends string>(
  body: PutBody<NoInfer<K>>,
  pathId: string,
  key: K,
  missing: string,
): { enabled: boolean | undefined; value: string; field: string } {
  if (body.id != null && body.id !== pathId) throw errors.invalidField('id', 'must equal the id in the path');
  if (body.module != null) {
    for (const flat of ['enabled', key] as const) {
      if (body[flat] != null) throw errors.unknownField(flat, ['id', 'module']);
    }
    return { enabled: body.module.enabled ?? undefined, value: body.module[key], field: `module.${key}` };
  }
  const value = body[key];
  if (value == null) throw errors.invalidField(key, missing);
  return { enabled: body.enabled ?? undefined, value, field: key };
}

import type { Compilable } from 'kysely';

/**
 * Hot queries are built with Kysely once, at start, and then run many times: building and
 * compiling a query costs more than running it on SQLite. A query is written with `param(name)`
 * where a value goes; compiling it yields SQL whose parameters are those markers, and each run
 * fills them in from a record of named values.
 */
const MARKER = '\u0000param:';

/** A named placeholder for `Store.prepare` (typed as whatever the column needs). */
export function param<T = string>(name: string): T {
  return `${MARKER}${name}` as T;
}

export type Values = Readonly<Record<string, unknown>>;

export interface PreparedQuery<Row> {
  /** Every row the query returns. */
  all(values: Values): Promise<Row[]>;
  /** The first row, if any. */
  first(values: Values): Promise<Row | undefined>;
  /** Runs a statement that returns no rows; resolves with the number of rows it changed. */
  run(values: Values): Promise<number>;
}

export interface CompiledTemplate {
  readonly sql: string;
  /** Whether the statement writes (insert, update, delete), with or without RETURNING. */
  readonly writes: boolean;
  /** 'select', 'insert', … for metrics. */
  readonly kind: string;
  /** Builds the positional parameters of one run. */
  bind(values: Values): unknown[];
}

export function compileTemplate(query: Compilable<unknown>): CompiledTemplate {
  const compiled = query.compile();
  const slots = compiled.parameters.map(
    (parameter): Slot =>
      typeof parameter === 'string' && parameter.startsWith(MARKER)
        ? { kind: 'named', name: parameter.slice(MARKER.length) }
        : { kind: 'constant', value: parameter },
  );
  const node = compiled.query.kind;
  const kind = node.endsWith('QueryNode') ? node.slice(0, -'QueryNode'.length).toLowerCase() : 'raw';
  return {
    sql: compiled.sql,
    writes: kind === 'insert' || kind === 'update' || kind === 'delete',
    kind,
    bind(values) {
      return slots.map((slot) => {
        if (slot.kind === 'constant') return slot.value;
        const value = values[slot.name];
        if (value === undefined) throw new Error(`No value for the query parameter ${slot.name}.`);
        return value;
      });
    },
  };
}

type Slot = { kind: 'named'; name: string } | { kind: 'constant'; value: unknown };

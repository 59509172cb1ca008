import type { LogEvent } from 'kysely';
import type { QueryListener } from './types.js';

/** Fans query timings out to listeners (metrics), naming the statement kind only. */
export class QueryObservers {
  private readonly listeners: QueryListener[] = [];

  add(listener: QueryListener): void {
    this.listeners.push(listener);
  }

  get active(): boolean {
    return this.listeners.length > 0;
  }

  notify(kind: string, durationMs: number, failed: boolean): void {
    for (const listener of this.listeners) listener(kind, durationMs, failed);
  }

  /** Kysely's `log` option: the queries that do not go through `prepare`. */
  readonly log = (event: LogEvent): void => {
    if (this.listeners.length === 0) return;
    const node = event.query.query.kind;
    const kind = node.endsWith('QueryNode') ? node.slice(0, -'QueryNode'.length).toLowerCase() : 'raw';
    this.notify(kind, event.queryDurationMillis, event.level === 'error');
  };
}

import type { Labels } from '../../domain/tunnel-group-backends/types.js';

// Label columns (a tunnel's, a tunnel group backend's selector) hold what JSON.stringify wrote.

/** JSON.parse keeps a `__proto__` key as an own key, so any label name comes back as it went in. */
export function parseLabels(text: string): Labels {
  return JSON.parse(text) as Labels;
}

/** A tunnel's labels column: null for a tunnel bound by URL. */
export function parseLabelsOrNull(text: string | null): Labels | null {
  return text === null ? null : parseLabels(text);
}

import { labelPartProblem } from '../acl.js';
import { errors, quote } from '../errors.js';
import type { Labels } from './types.js';

export const GROUP_LABELS_MIN = 1;
export const GROUP_LABELS_MAX = 10;

/**
 * A tunnel group's `labels` (TUNNELS.md §4): 1 to 10 entries, keys and values as SPEC §5.3's
 * label `key`/`value`. Returned with its keys sorted (as the reference API's Go maps print), and
 * built with `Object.fromEntries` so that a key such as `__proto__` stays an ordinary key.
 */
export function checkGroupLabels(labels: Readonly<Record<string, string>>, field = 'labels'): Labels {
  const entries = Object.entries(labels);
  if (entries.length < GROUP_LABELS_MIN || entries.length > GROUP_LABELS_MAX) {
    throw errors.invalidField(
      field,
      `must hold ${GROUP_LABELS_MIN} to ${GROUP_LABELS_MAX} labels, but ${entries.length} ${entries.length === 1 ? 'was' : 'were'} given`,
    );
  }
  for (const [key, value] of entries) {
    const problem = labelPartProblem(key, 'key') ?? labelPartProblem(value, 'value');
    if (problem) throw errors.invalidField(field, `has an invalid label ${quote(key)}: ${problem}`);
  }
  return sortedLabels(labels);
}

export function sortedLabels(labels: Readonly<Record<string, string>>): Labels {
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Whether a tunnel belongs to a group: its labels include every label of the group (it may have
 * more). The one matching rule, for the REST listing and the data plane's routing alike.
 */
export function labelsMatch(group: Labels, tunnel: Labels): boolean {
  for (const [key, value] of Object.entries(group)) {
    if (!Object.prototype.hasOwnProperty.call(tunnel, key) || tunnel[key] !== value) return false;
  }
  return true;
}

import type { PortRange } from './binds.js';

/** How many ports the ranges hold. */
export function portCount(ranges: readonly PortRange[]): number {
  return ranges.reduce((sum, range) => sum + range.last - range.first + 1, 0);
}

/** The n-th port of the ranges, in order (n below portCount): for walking them from a random offset. */
export function nthPort(ranges: readonly PortRange[], n: number): number {
  let rest = n;
  for (const range of ranges) {
    const size = range.last - range.first + 1;
    if (rest < size) return range.first + rest;
    rest -= size;
  }
  return ranges[0]!.first;
}

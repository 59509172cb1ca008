import { median } from '../stats.js';

/**
 * A small in-process micro-benchmark: each variant runs `iterations` times per repetition, the
 * variants alternate (A B C A B C …) `repetitions` times, and the median µs per call is kept.
 */
export interface Variant {
  name: string;
  run: () => unknown | Promise<unknown>;
}

export async function compare(title: string, variants: Variant[], iterations = 50_000, repetitions = 5): Promise<void> {
  const results = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  for (const v of variants) for (let i = 0; i < iterations / 5; i++) await v.run(); // warm-up, JIT
  for (let r = 0; r < repetitions; r++) {
    for (const v of variants) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < iterations; i++) await v.run();
      results.get(v.name)!.push(Number(process.hrtime.bigint() - start) / 1000 / iterations);
    }
  }
  const first = median(results.get(variants[0]!.name)!);
  process.stdout.write(`\n${title}\n`);
  for (const v of variants) {
    const us = median(results.get(v.name)!);
    process.stdout.write(`  ${v.name.padEnd(64)} ${us.toFixed(2).padStart(7)} µs/call  (${(us / first).toFixed(2)}× of the first)\n`);
  }
}

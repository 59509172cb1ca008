/**
 * `${expr}` interpolations inside action config strings. Every `${` starts one (there is no
 * escape); it ends at the first `}` that is outside CEL string literals and not closing a `{`
 * opened inside the expression, so `${ {'a': 1}['a'] }` and `${ "}" }` work.
 */

export interface Interpolation {
  /** The CEL text between `${` and `}`. */
  expression: string;
  /** Offset of the `$`. */
  start: number;
  /** Offset just after the closing `}`. */
  end: number;
}

export type ScanResult = { ok: true; parts: Interpolation[] } | { ok: false; start: number };

export function scanInterpolations(text: string): ScanResult {
  const parts: Interpolation[] = [];
  let from = 0;
  for (;;) {
    const start = text.indexOf('${', from);
    if (start < 0) return { ok: true, parts };
    const end = findClosingBrace(text, start + 2);
    if (end < 0) return { ok: false, start };
    parts.push({ expression: text.slice(start + 2, end), start, end: end + 1 });
    from = end + 1;
  }
}

/** Offset of the `}` closing an interpolation whose body starts at `from`, or -1. */
function findClosingBrace(text: string, from: number): number {
  let depth = 0;
  let i = from;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '"' || ch === "'") {
      i = skipStringLiteral(text, i, isRawPrefix(text, i, from));
      if (i < 0) return -1;
      continue;
    }
    if (ch === '{') depth++;
    else if (ch === '}') {
      if (depth === 0) return i;
      depth--;
    }
    i++;
  }
  return -1;
}

/** Whether the quote at `quote` is preceded by a raw-string prefix (r, R, rb, br, … in any case). */
function isRawPrefix(text: string, quote: number, bodyStart: number): boolean {
  let j = quote;
  while (j > bodyStart && j > quote - 2 && /[rRbB]/.test(text[j - 1]!)) j--;
  const prefix = text.slice(j, quote);
  if (!/[rR]/.test(prefix)) return false;
  // The prefix must be a token of its own, not the tail of an identifier such as `bar"`.
  return j === bodyStart || !/[\w]/.test(text[j - 1]!);
}

/** Offset just after the string literal opening at `open`, or -1 if it never closes. */
function skipStringLiteral(text: string, open: number, raw: boolean): number {
  const quote = text[open]!;
  const triple = text.startsWith(quote.repeat(3), open);
  const closing = triple ? quote.repeat(3) : quote;
  let i = open + closing.length;
  while (i < text.length) {
    if (!raw && text[i] === '\\') {
      i += 2;
      continue;
    }
    if (text.startsWith(closing, i)) return i + closing.length;
    i++;
  }
  return -1;
}

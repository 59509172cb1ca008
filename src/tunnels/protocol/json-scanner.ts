/**
 * Finds where the first JSON value of a byte stream ends, incrementally, without parsing it.
 *
 * Agents write one JSON value and do not half-close before reading the reply (RS: no newline,
 * GO: a trailing `\n`), so the end of the request is the end of its first complete value.
 * The scanner keeps its state between chunks (total work O(n)), matches brackets, tracks
 * strings and escapes, and rejects bytes that can never appear in JSON outside strings as
 * soon as they arrive. Full validation is left to `JSON.parse` on the delimited bytes.
 * Multi-byte UTF-8 needs no care: `"`, `\` and brackets are ASCII and never occur inside a
 * multi-byte sequence.
 */

export class JsonSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

const enum C {
  Quote = 0x22,
  Backslash = 0x5c,
  LBrace = 0x7b,
  RBrace = 0x7d,
  LBracket = 0x5b,
  RBracket = 0x5d,
}

function isWhitespace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Bytes of numbers and of `true` / `false` / `null`. */
function isScalarByte(b: number): boolean {
  return (
    (b >= 0x30 && b <= 0x39) || // 0-9
    b === 0x2d || b === 0x2b || b === 0x2e || // - + .
    b === 0x45 || b === 0x65 || // E e
    b === 0x74 || b === 0x72 || b === 0x75 || // t r u
    b === 0x66 || b === 0x61 || b === 0x6c || b === 0x73 || // f a l s
    b === 0x6e // n
  );
}

export class JsonValueScanner {
  private readonly stack: number[] = [];
  private inString = false;
  private escape = false;
  private started = false;
  /** A top-level number / literal is in progress: it ends at a delimiter or at EOF. */
  private topScalar = false;
  private complete = false;
  /** First non-whitespace byte of the value (`{`, `[`, `"` or a scalar byte); -1 before. */
  firstByte = -1;

  get done(): boolean {
    return this.complete;
  }

  /**
   * Feeds `chunk`. Returns the index in `chunk` just past the end of the first value once it
   * is complete (bytes from there on are not part of it), or -1 when more bytes are needed.
   * Throws JsonSyntaxError on a byte that cannot be part of a JSON value here.
   */
  push(chunk: Uint8Array): number {
    if (this.complete) return 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (b === C.Backslash) this.escape = true;
        else if (b === C.Quote) {
          this.inString = false;
          if (this.stack.length === 0) return this.finish(i + 1);
        } else if (b < 0x20) throw new JsonSyntaxError('control character in string');
        continue;
      }
      if (this.topScalar) {
        if (isScalarByte(b)) continue;
        if (isWhitespace(b) || b === C.LBrace || b === C.LBracket || b === C.Quote) return this.finish(i);
        throw new JsonSyntaxError(`unexpected byte 0x${b.toString(16)} after a value`);
      }
      if (isWhitespace(b)) continue;
      if (!this.started) {
        this.started = true;
        this.firstByte = b;
      }
      switch (b) {
        case C.Quote:
          this.inString = true;
          break;
        case C.LBrace:
        case C.LBracket:
          this.stack.push(b);
          break;
        case C.RBrace:
        case C.RBracket: {
          const open = this.stack.pop();
          if (open === undefined || (b === C.RBrace) !== (open === C.LBrace)) {
            throw new JsonSyntaxError(`unexpected '${String.fromCharCode(b)}'`);
          }
          if (this.stack.length === 0) return this.finish(i + 1);
          break;
        }
        case 0x3a: // :
        case 0x2c: // ,
          if (this.stack.length === 0) throw new JsonSyntaxError(`unexpected '${String.fromCharCode(b)}'`);
          break;
        default:
          if (!isScalarByte(b)) throw new JsonSyntaxError(`unexpected byte 0x${b.toString(16)}`);
          if (this.stack.length === 0) this.topScalar = true;
      }
    }
    return -1;
  }

  /** At end of stream: true when a top-level number / literal just ended there. */
  endOfInput(): boolean {
    if (this.complete) return true;
    if (this.topScalar && !this.inString) {
      this.complete = true;
      return true;
    }
    return false;
  }

  private finish(end: number): number {
    this.complete = true;
    return end;
  }
}

/** True when every byte of `buf` is JSON whitespace (GO's trailing `\n`). */
export function isAllWhitespace(buf: Uint8Array): boolean {
  for (const b of buf) if (!isWhitespace(b)) return false;
  return true;
}

/**
 * Text helpers every domain module shares: the UTF-8 length that SPEC's byte limits count, and
 * how a caller's value is quoted in a message.
 */

/** UTF-8 length without allocating; a lone surrogate counts as the 3-byte U+FFFD it becomes. */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * A caller's value as it may appear in a message: JSON-quoted (so control characters are visible
 * and cannot forge lines) and cut to `max` code points with "…", never splitting a surrogate pair
 * and never walking more than 2 × `max` UTF-16 units of a huge string.
 */
export function quote(value: string, max = 64): string {
  const points = Array.from(value.slice(0, max * 2));
  const cut = points.length > max || value.length > max * 2;
  return JSON.stringify(cut ? points.slice(0, max).join('') + '…' : value);
}

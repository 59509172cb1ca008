/**
 * The bench's TCP protocol, spoken by the local TCP (and TLS) server and the TCP load worker. The
 * client's first line picks what the connection does; every path carries it unchanged:
 *   `echo\n`     everything after it is echoed; the server ends when the client does;
 *   `down <n>\n` the server sends n bytes, then ends;
 *   `up <n>\n`   the client sends n bytes; the server answers `ok\n` once it has them all, then ends.
 */
export const MAX_HEADER_BYTES = 64;

export type Command = { kind: 'echo' } | { kind: 'down'; bytes: number } | { kind: 'up'; bytes: number };

export function header(command: Command): string {
  return command.kind === 'echo' ? 'echo\n' : `${command.kind} ${command.bytes}\n`;
}

export function parseHeader(line: string): Command | undefined {
  if (line === 'echo') return { kind: 'echo' };
  const match = /^(down|up) (\d{1,12})$/.exec(line);
  if (!match) return undefined;
  return { kind: match[1] as 'down' | 'up', bytes: Number(match[2]) };
}

/** 64 KiB of filler, written over and over (never allocated per write). */
export const CHUNK = Buffer.alloc(64 * 1024, 'burrow-bench ');

/** The local HTTP server's answer to GET / (GET /64k answers 64 KiB). */
export const SMALL_BODY = 'hello from the bench\n';

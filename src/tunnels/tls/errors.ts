/**
 * A configuration problem with TLS material (an unreadable file, a key that does not match its
 * certificate, …). The message is one line, names the file and, when the file came from the
 * environment, the variable; it is meant to be printed as is before the process exits.
 */
export class TlsConfigError extends Error {
  override readonly name = 'TlsConfigError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** `ENOENT` → `ENOENT (no such file)` and the like, for messages. */
export function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'ENOENT (no such file)';
    case 'EACCES':
    case 'EPERM':
      return `${code} (permission denied)`;
    case 'EISDIR':
      return 'EISDIR (is a directory)';
    case undefined:
      return err instanceof Error ? err.message : String(err);
    default:
      return code;
  }
}

/**
 * Per-dialect error translation: which driver errors mean "the database cannot take this request
 * now" (answered 503, and the instance reports not ready) rather than a bug (500).
 */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|READONLY|FULL|IOERR|CANTOPEN|NOMEM|PROTOCOL)/;
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// PostgreSQL SQLSTATE classes 08 (connection), 53 (resources), 57 (operator intervention,
// including statement timeouts), 58 (system errors), and 25006 (read-only transaction).
const POSTGRES_UNAVAILABLE = /^(08|53|57|58)|^25006$|^40001$|^40P01$/;

export function isUnavailableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (SQLITE_UNAVAILABLE.test(code) || NETWORK_CODES.has(code) || POSTGRES_UNAVAILABLE.test(code)) return true;
  }
  // node-postgres reports pool and socket failures as plain Errors without a code.
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout|Query read timeout|Client has encountered a connection error|database is closed|Cannot use a pool after calling end/i.test(
    error.message,
  );
}

/** True for a foreign-key violation on either dialect (a tunnel group named or deleted in a race). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

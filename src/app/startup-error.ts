/**
 * A start-up failure, named by the variable that decides it (DATABASE_URL, HOST, PORT, …): the
 * CLI prints its message on one line and exits 1.
 */
export class StartupError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'StartupError';
  }
}

/** The message of an error, without a password that a driver may have quoted from the URL. */
export function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\/\/[^/@\s]*@/g, '//…@');
}

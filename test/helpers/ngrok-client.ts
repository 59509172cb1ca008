import assert from 'node:assert/strict';

/** Helpers for driving the official npm client (@ngrok/ngrok-api 0.11.0) in the e2e suites. */

/** The shape of what the client's promises reject with (its `util.onRejected`). */
export interface ClientError {
  errorCode?: string;
  statusCode: number;
  msg: string;
  details: Map<string, string>;
}

/** Awaits the promise, which must reject, and returns the rejection reason. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the call to reject');
}

/** Checks a rejection is the client's error object for an API error, and returns it. */
export function apiError(reason: unknown, statusCode: number): ClientError {
  assert.ok(reason !== null && typeof reason === 'object', `expected an error object, got ${String(reason)}`);
  assert.ok(!(reason instanceof SyntaxError), `the client could not parse the error body: ${String(reason)}`);
  const error = reason as ClientError;
  assert.equal(error.statusCode, statusCode, JSON.stringify(error));
  assert.equal(typeof error.msg, 'string');
  assert.ok(error.msg.length > 0);
  assert.ok(error.details instanceof Map, 'details must be turned into a Map by the client');
  // The client camel-cases every key of the body, `details` included (util.deserializeResult),
  // so the body's `operation_id` reaches the caller as `operationId`.
  assert.match(String(error.details.get('operationId')), /^op_[0-9A-Za-z]{27}$/);
  for (const value of error.details.values()) assert.equal(typeof value, 'string');
  return error;
}

/** A request that never ends would hang the suite: fail it instead. */
export function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

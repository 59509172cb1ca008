import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';

export const OPERATION_ID = /^op_[0-9A-Za-z]{27}$/;

/**
 * Asserts SPEC §3's error shape: status line and status_code agree, error_code is exactly the
 * expected one (absent when undefined), msg is a sentence (exactly "Internal server error" for a
 * 5xx), details holds only strings and the operation id of the response.
 */
export function expectError(response: LightMyRequestResponse, status: number, errorCode: string | undefined): Record<string, unknown> {
  assert.equal(response.statusCode, status, `expected ${status}, got ${response.statusCode}: ${response.body}`);
  assert.equal(response.headers['content-type'], 'application/json');
  const body = JSON.parse(response.body) as Record<string, unknown>;
  if (errorCode === undefined) assert.ok(!('error_code' in body), `no error_code expected: ${response.body}`);
  else assert.equal(body.error_code, errorCode, response.body);
  assert.equal(body.status_code, status);
  assert.equal(typeof body.msg, 'string');
  assert.ok((body.msg as string).length > 5);
  const details = body.details as Record<string, unknown>;
  assert.equal(typeof details, 'object');
  for (const value of Object.values(details)) assert.equal(typeof value, 'string');
  assert.equal(details.operation_id, response.headers['ngrok-operation-id']);
  if (status >= 500) {
    // SPEC §3: a 5xx says nothing about its cause.
    assert.equal(body.msg, 'Internal server error');
    assert.deepEqual(Object.keys(details), ['operation_id']);
  }
  const keys = Object.keys(body);
  assert.deepEqual(keys, [...(errorCode === undefined ? [] : ['error_code']), 'status_code', 'msg', 'details']);
  return body;
}

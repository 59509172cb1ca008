import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTestApp, json } from '../helpers/app.js';
import { expectError } from '../helpers/assertions.js';

describe('rate limiting (SPEC §8)', () => {
  it('answers 429 ERR_NGROK_226 with Retry-After past RATE_LIMIT_PER_MINUTE, per account', async () => {
    const t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '5' });
    try {
      const other = await t.newCaller({ newAccount: true });
      for (let i = 0; i < 5; i++) assert.equal((await t.call({ method: 'GET', url: '/credentials' })).statusCode, 200);
      const limited = await t.call({ method: 'POST', url: '/credentials', body: {} });
      const error = expectError(limited, 429, 'ERR_NGROK_226');
      const retryAfter = Number(limited.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(limited.headers['retry-after']));
      assert.match(error.msg as string, new RegExp(`${retryAfter} seconds`));
      assert.equal(json<{ credentials: unknown[] }>(await t.call({ method: 'GET', url: '/credentials', key: other.key })).credentials.length, 0, 'another account is not limited');
      // Step 3 comes before the version check and after authentication.
      expectError(await t.call({ method: 'GET', url: '/credentials', version: false }), 429, 'ERR_NGROK_226');
      expectError(await t.call({ method: 'GET', url: '/credentials', key: null }), 401, 'ERR_NGROK_200');
      assert.equal((await t.call({ method: 'GET', url: '/healthz', key: null, version: false })).statusCode, 200, 'operational endpoints are not limited');
    } finally {
      await t.close();
    }
  });

  it('is off with RATE_LIMIT_PER_MINUTE=0', async () => {
    const t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0' });
    try {
      for (let i = 0; i < 50; i++) assert.equal((await t.call({ method: 'GET', url: '/credentials' })).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  it('holds across two instances on one PostgreSQL database', { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' }, async () => {
    const one = await createTestApp({ RATE_LIMIT_PER_MINUTE: '10' });
    const two = await createTestApp({ RATE_LIMIT_PER_MINUTE: '10' }, { sameDatabaseAs: one });
    try {
      for (let i = 0; i < 6; i++) assert.equal((await one.call({ method: 'GET', url: '/credentials' })).statusCode, 200);
      // The second instance's first request for the account fetches the shared counts.
      assert.equal((await two.call({ method: 'GET', url: '/credentials' })).statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, 700)); // more than two sync intervals of 250 ms
      let allowed = 0;
      for (let i = 0; i < 8; i++) if ((await two.call({ method: 'GET', url: '/credentials' })).statusCode === 200) allowed++;
      assert.equal(allowed, 3, 'the second instance saw the six requests of the first');
    } finally {
      await two.close();
      await one.close();
    }
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { appEngineAuthenticator, type AppEngineAuthenticatorOptions } from '../../src/auth/app-engine';
import { ConfigError } from '../../src/errors/errors';
import type { AuthRequest } from '../../src/types';

function request(headers: IncomingHttpHeaders): AuthRequest {
  return { method: 'POST', url: '/process', headers };
}

describe('appEngineAuthenticator', () => {
  describe('without an allow-list', () => {
    const authenticate = appEngineAuthenticator({ skipPlatformCheck: true });

    it('accepts a request carrying X-AppEngine-QueueName', async () => {
      assert.deepEqual(await authenticate(request({ 'x-appengine-queuename': 'default' })), { ok: true });
    });

    it('refuses a request without the header with 401', async () => {
      assert.deepEqual(await authenticate(request({ 'x-cloudtasks-queuename': 'default' })), {
        ok: false,
        status: 401,
        reason: 'missing X-AppEngine-QueueName header',
      });
    });

    it('refuses an empty header with 401', async () => {
      const verdict = await authenticate(request({ 'x-appengine-queuename': '' }));
      assert.deepEqual(verdict, { ok: false, status: 401, reason: 'missing X-AppEngine-QueueName header' });
    });
  });

  describe('with an allow-list of queues', () => {
    const authenticate = appEngineAuthenticator({ queues: ['orders', 'emails'], skipPlatformCheck: true });

    it('accepts a listed queue', async () => {
      assert.deepEqual(await authenticate(request({ 'x-appengine-queuename': 'emails' })), { ok: true });
    });

    it('refuses another queue with 403, naming it', async () => {
      const verdict = await authenticate(request({ 'x-appengine-queuename': 'default' }));
      assert.deepEqual(verdict, { ok: false, status: 403, reason: 'queue "default" is not among the allowed queues' });
    });

    it('still refuses a missing header with 401', async () => {
      const verdict = await authenticate(request({}));
      assert.equal(verdict.ok, false);
      assert.equal(verdict.ok === false && verdict.status, 401);
    });
  });

  describe('options', () => {
    const invalid: [string, unknown][] = [
      ['an empty allow-list', []],
      ['an allow-list that is not an array', 'orders'],
      ['an allow-list with an empty name', ['orders', '']],
      ['an allow-list with a non-string', ['orders', 7]],
    ];
    for (const [name, queues] of invalid) {
      it(`rejects ${name} with a ConfigError`, () => {
        assert.throws(
          () => appEngineAuthenticator({ queues, skipPlatformCheck: true } as AppEngineAuthenticatorOptions),
          (error: unknown) => error instanceof ConfigError && /^appEngineAuthenticator: `queues`/.test(error.message),
        );
      });
    }
  });
});

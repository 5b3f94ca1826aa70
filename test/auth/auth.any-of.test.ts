import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { anyOf } from '../../src/auth/any-of';
import { appEngineAuthenticator } from '../../src/auth/app-engine';
import { ConfigError } from '../../src/errors/errors';
import type { AuthRequest, AuthVerdict, Authenticator } from '../../src/types';

const request: AuthRequest = { method: 'POST', url: '/process', headers: {} };

/** An authenticator that always answers `verdict` and counts its calls. */
function fixed(verdict: AuthVerdict): Authenticator & { calls: number } {
  const authenticator = Object.assign(
    async () => {
      authenticator.calls += 1;
      return verdict;
    },
    { calls: 0 },
  );
  return authenticator;
}

describe('anyOf', () => {
  it('accepts as soon as one authenticator accepts, without asking the rest', async () => {
    const first = fixed({ ok: false, status: 401, reason: 'first' });
    const second = fixed({ ok: true });
    const third = fixed({ ok: false, status: 403, reason: 'third' });
    assert.deepEqual(await anyOf(first, second, third)(request), { ok: true });
    assert.deepEqual([first.calls, second.calls, third.calls], [1, 1, 0]);
  });

  it('answers with the first refusal when all refuse', async () => {
    const verdict = await anyOf(
      fixed({ ok: false, status: 403, reason: 'wrong queue' }),
      fixed({ ok: false, status: 401, reason: 'no token' }),
    )(request);
    assert.deepEqual(verdict, { ok: false, status: 403, reason: 'wrong queue' });
  });

  it('combines real authenticators, synchronous ones included', async () => {
    const either = anyOf(appEngineAuthenticator({ queues: ['orders'], skipPlatformCheck: true }), fixed({ ok: false, status: 401, reason: 'no token' }));
    assert.deepEqual(await either({ ...request, headers: { 'x-appengine-queuename': 'orders' } }), { ok: true });
    assert.deepEqual(await either(request), { ok: false, status: 401, reason: 'missing X-AppEngine-QueueName header' });
  });

  it('counts an authenticator that throws as a 401 refusal and asks the next', async () => {
    const throwing: Authenticator = () => {
      throw new RangeError('boom');
    };
    assert.deepEqual(await anyOf(throwing, fixed({ ok: true }))(request), { ok: true });
    assert.deepEqual(await anyOf(throwing)(request), {
      ok: false,
      status: 401,
      reason: 'an authenticator failed unexpectedly (RangeError)',
    });
  });

  it('rejects an empty list or a non-function with a ConfigError', () => {
    assert.throws(() => anyOf(), ConfigError);
    assert.throws(() => anyOf(fixed({ ok: true }), 'secret' as unknown as Authenticator), /authenticator 2 is not a function/);
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContentionError, LeaseLostError, StoreUnavailableError } from '../../src/errors/errors';
import { withContentionRetry } from '../../src/locks/retry';

/** A recording sleep and a fixed random number: no real waiting. */
function fakeTime(random = 0.5) {
  const delays: number[] = [];
  return { delays, random: () => random, sleep: async (ms: number) => void delays.push(ms) };
}

describe('withContentionRetry', () => {
  it('returns the first result that is not contention, retrying in between', async () => {
    const time = fakeTime();
    let runs = 0;
    const result = await withContentionRetry(
      async () => {
        runs += 1;
        if (runs < 3) throw new ContentionError(`run ${runs}`);
        return 'done';
      },
      { attempts: 5, baseDelayMs: 100, maxDelayMs: 1_000, random: time.random, sleep: time.sleep },
    );
    assert.equal(result, 'done');
    assert.equal(runs, 3);
    assert.deepEqual(time.delays, [50, 100], 'half (random 0.5) of 100, then of 200');
  });

  it('does not wait before the first run, nor retry other errors', async () => {
    const time = fakeTime();
    const lost = new LeaseLostError('lost');
    let runs = 0;
    await assert.rejects(
      withContentionRetry(async () => {
        runs += 1;
        throw lost;
      }, { random: time.random, sleep: time.sleep }),
      (err) => err === lost,
    );
    assert.equal(runs, 1);
    assert.deepEqual(time.delays, []);
  });

  it('gives up after `attempts` runs with StoreUnavailableError caused by the last contention', async () => {
    const time = fakeTime(0.999);
    const errors: ContentionError[] = [];
    await assert.rejects(
      withContentionRetry(
        async () => {
          const error = new ContentionError(`run ${errors.length + 1}`);
          errors.push(error);
          throw error;
        },
        { attempts: 6, baseDelayMs: 100, maxDelayMs: 700, random: time.random, sleep: time.sleep },
      ),
      (err) => err instanceof StoreUnavailableError && err.cause === errors.at(-1),
    );
    assert.equal(errors.length, 6);
    assert.deepEqual(time.delays, [99, 199, 399, 699, 699], 'exponential, capped at maxDelayMs');
  });

  it('draws each delay between zero and its cap (full jitter)', async () => {
    const time = fakeTime(0);
    await assert.rejects(
      withContentionRetry(async () => Promise.reject(new ContentionError('always')), { attempts: 3, random: time.random, sleep: time.sleep }),
      StoreUnavailableError,
    );
    assert.deepEqual(time.delays, [0, 0]);
  });

  it('sleeps for real by default', async () => {
    let runs = 0;
    const result = await withContentionRetry(
      async () => {
        runs += 1;
        if (runs === 1) throw new ContentionError('once');
        return runs;
      },
      { baseDelayMs: 1, maxDelayMs: 1 },
    );
    assert.equal(result, 2);
  });

  it('refuses fewer than one attempt', async () => {
    await assert.rejects(withContentionRetry(async () => 1, { attempts: 0 }), RangeError);
  });
});

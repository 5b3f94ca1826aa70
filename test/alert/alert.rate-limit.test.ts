import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RateLimiter } from '../../src/alert/rate-limit';
import { ConfigError } from '../../src/errors/errors';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): { now: () => number; set: (ms: number) => void } {
  let time = start;
  return { now: () => time, set: (ms) => (time = start + ms) };
}

describe('RateLimiter', () => {
  describe('within one window', () => {
    it('grants max and holds back the rest, counting them', () => {
      const clock = manualClock();
      const limiter = new RateLimiter({ max: 3, perMs: 1_000 }, clock.now);
      const decisions = Array.from({ length: 5 }, () => limiter.take());
      assert.deepEqual(decisions, [
        { allowed: true, suppressed: 0 },
        { allowed: true, suppressed: 0 },
        { allowed: true, suppressed: 0 },
        { allowed: false, suppressed: 1 },
        { allowed: false, suppressed: 2 },
      ]);
      assert.equal(limiter.pending, 2);
    });
  });

  describe('across windows', () => {
    it('reports the held-back count on the next grant, then resets it', () => {
      const clock = manualClock();
      const limiter = new RateLimiter({ max: 2, perMs: 1_000 }, clock.now);
      for (let i = 0; i < 6; i += 1) limiter.take();
      clock.set(999);
      assert.deepEqual(limiter.take(), { allowed: false, suppressed: 5 });
      clock.set(1_000);
      assert.deepEqual(limiter.take(), { allowed: true, suppressed: 5 });
      assert.deepEqual(limiter.take(), { allowed: true, suppressed: 0 });
      assert.equal(limiter.pending, 0);
    });

    it('slides: a grant frees its slot exactly perMs after it was made', () => {
      const clock = manualClock();
      const limiter = new RateLimiter({ max: 2, perMs: 1_000 }, clock.now);
      assert.equal(limiter.take().allowed, true); // t=0
      clock.set(600);
      assert.equal(limiter.take().allowed, true); // t=600
      clock.set(900);
      assert.equal(limiter.take().allowed, false);
      clock.set(1_000);
      assert.deepEqual(limiter.take(), { allowed: true, suppressed: 1 }); // the t=0 slot left the window
      clock.set(1_599);
      assert.equal(limiter.take().allowed, false);
      clock.set(1_600);
      assert.deepEqual(limiter.take(), { allowed: true, suppressed: 1 });
    });
  });

  describe('restore', () => {
    it('hands a count back to the next grant when a send failed', () => {
      const clock = manualClock();
      const limiter = new RateLimiter({ max: 1, perMs: 1_000 }, clock.now);
      limiter.take();
      limiter.take();
      limiter.take();
      clock.set(1_000);
      const granted = limiter.take();
      assert.deepEqual(granted, { allowed: true, suppressed: 2 });
      limiter.restore(granted.suppressed);
      clock.set(2_000);
      assert.deepEqual(limiter.take(), { allowed: true, suppressed: 2 });
    });
  });

  describe('options', () => {
    for (const bad of [
      { max: 0, perMs: 1_000 },
      { max: 1.5, perMs: 1_000 },
      { max: -1, perMs: 1_000 },
      { max: 2, perMs: 0 },
      { max: 2, perMs: Number.NaN },
      { max: 2, perMs: Number.POSITIVE_INFINITY },
    ]) {
      it(`rejects ${JSON.stringify(bad)} with ConfigError`, () => {
        assert.throws(() => new RateLimiter(bad), ConfigError);
      });
    }

    it('rejects a missing limit and a clock that is not a function', () => {
      assert.throws(() => new RateLimiter(null as never), ConfigError);
      assert.throws(() => new RateLimiter({ max: 1, perMs: 1 }, 5 as never), /clock/);
    });

    it('uses Date.now when no clock is given', () => {
      const limiter = new RateLimiter({ max: 1, perMs: 60_000 });
      assert.deepEqual(limiter.take(), { allowed: true, suppressed: 0 });
      assert.deepEqual(limiter.take(), { allowed: false, suppressed: 1 });
    });
  });
});

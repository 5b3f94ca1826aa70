import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SeenSteps } from '../src/seen-steps';
import { keys } from './support/task-app';
import { StepState, type Properties } from '../src/types';

const NOW = 1_700_000_000_000;
const LEASE = 60_000;
const key = keys.key(['Order', 'o1']);
const lock = (over: Properties = {}): Properties => ({
  lock_ts: new Date(NOW), lock_req: '', lock_seq: 5, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1', ...over,
});
const seen = (props: Properties, size = 10, ttlMs = 10_000): SeenSteps => {
  const s = new SeenSteps({ size, ttlMs });
  s.observe(key, props, NOW, LEASE);
  return s;
};

describe('SeenSteps: answers only what stale knowledge cannot get wrong', () => {
  it('knows nothing of an entity it never saw', () => {
    assert.equal(new SeenSteps({ size: 10, ttlMs: 10_000 }).recall(key, 1, 'c1', NOW), undefined);
  });
  it('drops a step behind the sequence seen (sequences only grow)', () => {
    assert.deepEqual(seen(lock()).recall(key, 4, 'c1', NOW), { action: 'drop', reason: 'finished' });
  });
  it('leaves the current step with a free lease, and later steps, to the store', () => {
    assert.equal(seen(lock()).recall(key, 5, 'c1', NOW), undefined);
    assert.equal(seen(lock()).recall(key, 6, 'c1', NOW), undefined);
  });
  it('drops a step seen failed', () => {
    assert.deepEqual(seen(lock({ lock_state: StepState.failed })).recall(key, 5, 'c1', NOW), { action: 'drop', reason: 'failed' });
  });
  it('refuses while the lease seen is fresh, and asks the store once it may be stale', () => {
    const s = seen(lock({ lock_req: 'other' }));
    assert.deepEqual(s.recall(key, 5, 'c1', NOW + 1_000), { action: 'refuse', holder: 'other', retryAfterMs: LEASE - 1_000 });
    assert.equal(seen(lock({ lock_req: 'other' }), 10, LEASE * 2).recall(key, 5, 'c1', NOW + LEASE), undefined);
  });
  it('does not answer for another chain, or for a task that names none when the entity has one', () => {
    assert.equal(seen(lock()).recall(key, 4, 'c2', NOW), undefined);
    assert.equal(seen(lock()).recall(key, 4, undefined, NOW), undefined);
  });
  it('forgets after ttlMs, after forget(), and when the entity is gone', () => {
    assert.equal(seen(lock(), 10, 500).recall(key, 4, 'c1', NOW + 500), undefined);
    const s = seen(lock());
    s.forget(key);
    assert.equal(s.recall(key, 4, 'c1', NOW), undefined);
    const t = seen(lock());
    t.observe(key, undefined, NOW, LEASE);
    assert.equal(t.size, 0);
  });
  it('keeps at most size entities, dropping the least recently seen; size 0 keeps none', () => {
    const s = new SeenSteps({ size: 3, ttlMs: 10_000 });
    for (let i = 0; i < 5; i++) s.observe(keys.key(['Order', `k${i}`]), lock(), NOW, LEASE);
    assert.equal(s.size, 3);
    assert.equal(s.recall(keys.key(['Order', 'k0']), 4, 'c1', NOW), undefined);
    assert.deepEqual(s.recall(keys.key(['Order', 'k4']), 4, 'c1', NOW), { action: 'drop', reason: 'finished' });
    const none = new SeenSteps({ size: 0, ttlMs: 10_000 });
    none.observe(key, lock(), NOW, LEASE);
    assert.equal(none.size, 0);
  });
});

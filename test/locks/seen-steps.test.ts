import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { REFUSAL_TTL_MS, SeenSteps } from '../../src/locks/seen-steps';
import { MemoryStore } from '../../src/store/memory/store';
import { keys, taskApp } from '../support/task-app';
import { StepState, type Properties } from '../../src/types';

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
  it('leaves a step seen failed or cancelled to the store: a retry makes a failed step live again at the same seq', () => {
    assert.equal(seen(lock({ lock_state: StepState.failed })).recall(key, 5, 'c1', NOW), undefined);
    assert.equal(seen(lock({ lock_state: StepState.cancelled })).recall(key, 5, 'c1', NOW), undefined);
    assert.deepEqual(seen(lock({ lock_state: StepState.failed })).recall(key, 4, 'c1', NOW), { action: 'drop', reason: 'finished' }, 'an earlier step is still behind it');
  });
  it('refuses while the lease seen is fresh, and asks the store once it may be stale', () => {
    const s = seen(lock({ lock_req: 'other' }));
    assert.deepEqual(s.recall(key, 5, 'c1', NOW + 500), { action: 'refuse', holder: 'other', retryAfterMs: LEASE - 500 });
    const stale = new SeenSteps({ size: 10, ttlMs: LEASE * 2 });
    stale.observe(key, lock({ lock_req: 'other', lock_ts: new Date(NOW - LEASE + 100) }), NOW, LEASE);
    assert.equal(stale.recall(key, 5, 'c1', NOW + 100), undefined, 'the lease went stale before REFUSAL_TTL_MS passed');
  });
  it('refuses from memory only within REFUSAL_TTL_MS of seeing the lease held, whatever ttlMs and the lease say', () => {
    const s = seen(lock({ lock_req: 'other' }), 10, 10_000);
    assert.equal(s.recall(key, 5, 'c1', NOW + REFUSAL_TTL_MS - 1)?.action, 'refuse');
    assert.equal(s.recall(key, 5, 'c1', NOW + REFUSAL_TTL_MS), undefined);
    assert.deepEqual(s.recall(key, 4, 'c1', NOW + REFUSAL_TTL_MS), { action: 'drop', reason: 'finished' }, 'drops still come from memory');
    assert.equal(seen(lock({ lock_req: 'other' }), 10, 200).recall(key, 5, 'c1', NOW + 200), undefined, 'a shorter ttlMs bounds refusals too');
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

describe('duplicateCache across instances: a step finished elsewhere', () => {
  it('is refused from memory for at most REFUSAL_TTL_MS after it was last seen held, then dropped after one read', async () => {
    const store = new MemoryStore({ projectId: 'locker-test' });
    let now = NOW;
    const clock = () => now;
    const a = taskApp(store, { clock });
    const b = taskApp(store, { clock });
    const entity = keys.key(['Counter', 'finished-elsewhere']);
    await store.transaction(async (tx) => tx.put(entity, lock({ lock_chain: undefined, lock_seq: 1 }), []));

    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    a.behave(() => running);
    const first = a.send(entity, 1).then((res) => res);
    while (a.runs.length === 0) await new Promise((resolve) => setImmediate(resolve));

    let reads = 0;
    const read = store.read.bind(store);
    store.read = async (k) => ((reads += 1), read(k));
    assert.equal((await b.send(entity, 1)).status, 503, 'instance B reads the lease held by A');
    assert.equal(reads, 1);
    release();
    assert.equal((await first).status, 200, 'A finished the step');

    now += REFUSAL_TTL_MS - 1;
    assert.equal((await b.send(entity, 1)).status, 503, 'B still refuses from memory, without a read');
    assert.equal(reads, 1);
    now += 1;
    const res = await b.send(entity, 1);
    assert.equal(res.status, 200, 'once REFUSAL_TTL_MS passed B reads the store and drops the duplicate');
    assert.match(res.text, /duplicate of a finished step/);
    assert.equal(reads, 2);
    assert.equal(b.runs.length, 0);
  });
});

describe('simultaneous deliveries of one step in one process', () => {
  it('run the handler once, cost one step of reads, and are all answered: copies wait for the attempt in flight', async () => {
    const store = new MemoryStore({ projectId: 'locker-test' });
    const app = taskApp(store);
    const entity = keys.key(['Counter', 'twenty-at-once']);
    await store.transaction(async (tx) => tx.put(entity, lock({ lock_chain: undefined, lock_seq: 1 }), []));
    let reads = 0;
    const read = store.read.bind(store);
    store.read = async (k) => ((reads += 1), read(k));

    const answers = await Promise.all(Array.from({ length: 20 }, () => app.send(entity, 1).then((res) => res)));
    assert.equal(app.runs.length, 1, 'the handler ran once');
    assert.deepEqual(answers.map((res) => res.status), Array(20).fill(200));
    assert.equal(answers.filter((res) => /duplicate of a finished step/.test(res.text)).length, 19);
    assert.equal(reads, 1, 'only the attempt that ran read the entity; the copies were answered from what it wrote');
  });

  it('without the cache every copy goes to the store, and the handler still runs once', async () => {
    const store = new MemoryStore({ projectId: 'locker-test' });
    const app = taskApp(store, { duplicateCache: false });
    const entity = keys.key(['Counter', 'twenty-uncached']);
    await store.transaction(async (tx) => tx.put(entity, lock({ lock_chain: undefined, lock_seq: 1 }), []));
    let reads = 0;
    const read = store.read.bind(store);
    store.read = async (k) => ((reads += 1), read(k));
    const answers = await Promise.all(Array.from({ length: 20 }, () => app.send(entity, 1).then((res) => res)));
    assert.equal(app.runs.length, 1);
    assert.equal(answers.length, 20);
    assert.ok(reads >= 20, `each copy read the entity, got ${reads} reads`);
  });
});

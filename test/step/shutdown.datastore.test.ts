// locker.shutdown() and the request's time limit, on the Datastore emulator: a drain that waits
// for running steps, a gate that answers 503 without touching the store, and leases handed back
// (silently, or stale with an alert) so the next delivery runs the step at once.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { keys, taskApp, type TaskApp } from '../support/task-app';
import { ConfigError, LeaseLostError, RequestTimeoutError, ShutdownError } from '../../src/errors/errors';
import type { LockerEvents } from '../../src/events/events';
import { readLock } from '../../src/rules/lock-fields';
import { StepState, type Properties, type Snapshot, type Store, type StoreTransaction } from '../../src/types';

let store: DatastoreStore;
let namespace: string;
let n = 0;

before(() => {
  namespace = uniqueNamespace('shutdown');
  store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
});

const newKey = (): Key => keys.key({ namespace, path: ['Counter', `s${++n}-${Date.now()}`] });

async function seed(key: Key): Promise<void> {
  await store.transaction(async (tx) => {
    tx.put(key, { count: 1, label: 'x', lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled, lock_chain: 'c1' }, []);
  });
}

async function lockOf(key: Key) {
  const props = await store.get(key);
  assert.ok(props, 'the entity exists');
  return readLock(props);
}

/** A promise the test settles, and one that resolves once the handler got there. */
function gate(): { open: () => void; opened: Promise<void>; reached: Promise<void>; reach: () => void } {
  let open!: () => void;
  let reach!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  const reached = new Promise<void>((r) => { reach = r; });
  return { open, opened, reached, reach };
}

/** Every `retryLater` and `handedBack` event of a Locker. */
function record(t: TaskApp): { retryLater: Array<LockerEvents['retryLater'][0]>; handedBack: Array<LockerEvents['handedBack'][0]> } {
  const seen = { retryLater: [] as Array<LockerEvents['retryLater'][0]>, handedBack: [] as Array<LockerEvents['handedBack'][0]> };
  t.locker.on('retryLater', (e) => seen.retryLater.push(e));
  t.locker.on('handedBack', (e) => seen.handedBack.push(e));
  return seen;
}

/** The store, counting calls and noting when each write of a finished step (lock_seq moved on) resolved. */
function watched(inner: Store, log: string[]): Store & { calls: number } {
  const w = {
    calls: 0,
    get projectId() { return inner.projectId; },
    transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> { w.calls++; return inner.transaction(fn); },
    get(key: Key) { w.calls++; return inner.get(key); },
    read(key: Key) { w.calls++; return inner.read(key); },
    async replaceIfUnchanged(key: Key, snapshot: Snapshot, props: Properties, excludes: readonly string[]) {
      w.calls++;
      const written = await inner.replaceIfUnchanged(key, snapshot, props, excludes);
      if (written && props.lock_state === StepState.complete) log.push(`stored ${String(key.name)}`);
      return written;
    },
    listDue(now: Date, limit: number) { w.calls++; return inner.listDue(now, limit); },
  };
  return w as Store & { calls: number };
}

/** Rejects with the signal's reason once it aborts: a handler that stops on it. */
function stopOn(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

describe('locker.shutdown()', () => {
  it('waits for a running step to be stored; meanwhile a new task gets 503 without a store call and runs once on another Locker', async () => {
    const log: string[] = [];
    const counted = watched(store, log);
    const stopping = taskApp(counted);
    const other = taskApp(store);
    const seen = record(stopping);
    const running = newKey();
    const arriving = newKey();
    await seed(running);
    await seed(arriving);
    const g = gate();
    stopping.behave(async () => { g.reach(); await g.opened; });

    const first = stopping.send(running, 1).then((res) => res);
    await g.reached;
    const shut = stopping.locker.shutdown({ timeoutMs: 120_000 }).then(() => { log.push('shutdown resolved'); });
    const callsBefore = counted.calls;
    const refused = await stopping.send(arriving, 1);
    assert.equal(refused.status, 503);
    assert.ok(refused.headers['retry-after'], 'a Retry-After header');
    assert.equal(refused.headers.connection, 'close', 'the connection ends with the answer, so the server can close');
    assert.equal(counted.calls, callsBefore, 'the stopping Locker did not touch the store for the new task');
    assert.deepEqual(seen.retryLater.map((e) => [e.status, e.reason]), [[503, 'draining']]);
    const elsewhere = await other.send(arriving, 1);
    assert.equal(elsewhere.status, 200);
    assert.equal(other.runs.length, 1);
    assert.equal((await lockOf(arriving)).state, StepState.complete);
    assert.deepEqual(log, [], 'shutdown() has not resolved while the handler runs');

    g.open();
    assert.equal((await first).status, 200);
    await shut;
    assert.deepEqual(log, [`stored ${String(running.name)}`, 'shutdown resolved']);
    assert.equal((await lockOf(running)).seq, 2);
    assert.equal(stopping.runs.length, 1, 'the stopping Locker ran only the step it had taken');
    // Twice is safe, and handle() after shutdown still answers 503.
    await stopping.locker.shutdown();
    assert.equal((await stopping.send(newKey(), 1)).status, 503);
  });

  it('hands back silently the lease of a handler that stops on its signal: the next delivery takes it at once, no try counted, no alert', async () => {
    const stopping = taskApp(store);
    const other = taskApp(store);
    const seen = record(stopping);
    const key = newKey();
    await seed(key);
    const g = gate();
    let reason: unknown;
    stopping.behave(async (ctx) => {
      g.reach();
      try { await stopOn(ctx.signal); } catch (error) { reason = error; throw error; }
    });
    const answer = stopping.send(key, 1).then((res) => res);
    await g.reached;
    await stopping.locker.shutdown({ timeoutMs: 400 });
    const res = await answer;
    assert.equal(res.status, 503);
    assert.ok(reason instanceof ShutdownError, 'the signal aborted with ShutdownError');
    assert.equal(reason.code, 'SHUTDOWN');
    const lock = await lockOf(key);
    assert.deepEqual([lock.req, lock.tries, lock.state, lock.seq], ['', 0, StepState.scheduled, 1], 'free, no try counted');
    assert.deepEqual(seen.handedBack.map((e) => [e.reason, e.silent, e.attempt]), [['shutdown', true, stopping.runs[0]!.attempt]]);
    assert.deepEqual(seen.retryLater.map((e) => [e.status, e.reason]), [[503, 'shutdown']]);

    const next = await other.send(key, 1);
    assert.equal(next.status, 200, 'run at once, not refused as held');
    assert.deepEqual(other.events.map((e) => e.name), ['acquired', 'completed']);
    assert.deepEqual([...stopping.alerts, ...other.alerts], [], 'no alert');
  });

  it('a handler that finishes its step within its grace after the stop is answered 200 with its step stored; nothing is handed back', async () => {
    const stopping = taskApp(store);
    const seen = record(stopping);
    const key = newKey();
    await seed(key);
    const g = gate();
    let abortedFirst = false;
    stopping.behave(async (ctx) => {
      g.reach();
      // Its effect is done when the stop comes: it moves on instead of stopping.
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      abortedFirst = ctx.signal.reason instanceof ShutdownError;
      ctx.entity.count = 7;
      await ctx.complete();
    });
    const answer = stopping.send(key, 1).then((res) => res);
    await g.reached;
    await stopping.locker.shutdown({ timeoutMs: 400 });
    assert.equal((await answer).status, 200);
    assert.ok(abortedFirst, 'the signal aborted with ShutdownError before complete()');
    const after = await store.get(key);
    assert.equal(after?.count, 7);
    assert.deepEqual([readLock(after!).state, readLock(after!).seq], [StepState.complete, 2]);
    assert.deepEqual(seen.handedBack, []);
  });

  it('writes stale the lease of a handler that runs on: the next delivery overwrites it, counts a try and alerts naming the interrupted attempt', async () => {
    const stopping = taskApp(store);
    const other = taskApp(store);
    const seen = record(stopping);
    const key = newKey();
    await seed(key);
    const g = gate();
    let lateWrite: unknown;
    stopping.behave(async (ctx) => {
      g.reach();
      await g.opened; // deaf to the signal
      ctx.entity.count = 999;
      try { await ctx.complete(); } catch (error) { lateWrite = error; }
    });
    const answer = stopping.send(key, 1).then((res) => res);
    await g.reached;
    await stopping.locker.shutdown({ timeoutMs: 400 });
    assert.equal((await answer).status, 503);
    const interrupted = stopping.runs[0]!.attempt;
    const lock = await lockOf(key);
    assert.equal(lock.req, interrupted, 'the holder is kept');
    assert.ok(Date.now() - lock.ts!.getTime() >= stopping.locker.config.leaseDuration, 'the lease is stale at once');
    assert.deepEqual(seen.handedBack.map((e) => [e.reason, e.silent]), [['shutdown', false]]);

    const next = await other.send(key, 1);
    assert.equal(next.status, 200, 'run at once, not refused as held');
    assert.deepEqual(other.events.map((e) => e.name), ['overwritten', 'completed']);
    assert.equal(other.alerts.length, 1);
    assert.equal(other.alerts[0]!.reason, 'overwrite');
    assert.equal(other.alerts[0]!.previousAttempt, interrupted, 'the alert names the interrupted attempt');
    assert.equal(other.alerts[0]!.retries, 1, 'the interrupted attempt counts as a failed one');

    // The handler that ran on can no longer write.
    g.open();
    await waitFor(() => lateWrite !== undefined);
    assert.ok(lateWrite instanceof LeaseLostError);
    const after = await store.get(key);
    assert.equal(after?.count, 1);
    assert.equal(readLock(after!).state, StepState.complete);
  });
});

describe('locker.shutdown({ timeoutMs }) refuses a bad time', () => {
  it('rejects with ConfigError and keeps taking steps', async () => {
    const t = taskApp(store);
    const key = newKey();
    await seed(key);
    for (const timeoutMs of [0, -1, 1.5]) await assert.rejects(t.locker.shutdown({ timeoutMs }), ConfigError);
    assert.equal((await t.send(key, 1)).status, 200);
    assert.equal(t.runs.length, 1);
  });
});

describe('locker.shutdown(): a handler that finished its step and then hangs', () => {
  it('is answered 200 with its step stored; nothing is handed back', async () => {
    const t = taskApp(store);
    const seen = record(t);
    const key = newKey();
    await seed(key);
    const g = gate();
    t.behave(async (ctx) => { await ctx.complete(); g.reach(); await g.opened; });
    const answer = t.send(key, 1).then((res) => res);
    await g.reached;
    await t.locker.shutdown({ timeoutMs: 400 });
    assert.equal((await answer).status, 200);
    const lock = await lockOf(key);
    assert.deepEqual([lock.seq, lock.state, lock.req], [2, StepState.complete, '']);
    assert.deepEqual(seen.handedBack, []);
    g.open();
  });
});

describe('requestTimeout: a step is stopped before the platform cuts its request', () => {
  // requestTimeout 4 s: the handler is stopped at 3 s, given up at 3.5 s. The request itself is cut
  // at 4 s, as the platform would: an answer after that never arrives.
  const requestTimeout = 4_000;

  it('a handler that stops on the signal: released for a retry (a try counted), answered 503 before the cut, and the next delivery runs at once', async () => {
    const t = taskApp(store, { requestTimeout });
    const seen = record(t);
    const key = newKey();
    await seed(key);
    let reason: unknown;
    t.behave(async (ctx) => { try { await stopOn(ctx.signal); } catch (error) { reason = error; throw error; } });
    const res = await t.send(key, 1).timeout(requestTimeout);
    assert.equal(res.status, 503);
    assert.ok(reason instanceof RequestTimeoutError);
    const lock = await lockOf(key);
    assert.deepEqual([lock.req, lock.tries, lock.state], ['', 1, StepState.scheduled]);
    assert.deepEqual(seen.retryLater.map((e) => [e.status, e.reason]), [[503, 'time-limit']]);
    t.behave(() => {});
    assert.equal((await t.send(key, 1)).status, 200);
    assert.deepEqual(t.events.map((e) => e.name), ['acquired', 'released', 'acquired', 'completed']);
    assert.deepEqual(t.alerts, []);
  });

  it('a handler that runs on: its lease written stale and the task answered 503 before the cut; the next delivery overwrites it with an alert', async () => {
    const t = taskApp(store, { requestTimeout });
    const seen = record(t);
    const key = newKey();
    await seed(key);
    const g = gate();
    t.behave(async () => { await g.opened; });
    const res = await t.send(key, 1).timeout(requestTimeout);
    assert.equal(res.status, 503);
    const interrupted = t.runs[0]!.attempt;
    assert.deepEqual(seen.handedBack.map((e) => [e.reason, e.silent, e.attempt]), [['time-limit', false, interrupted]]);
    t.behave(() => {});
    assert.equal((await t.send(key, 1)).status, 200);
    assert.deepEqual(t.events.map((e) => e.name), ['acquired', 'overwritten', 'completed']);
    assert.equal(t.alerts.length, 1);
    assert.equal(t.alerts[0]!.previousAttempt, interrupted);
    g.open();
  });
});

describe('retryLater: every non-2xx answer, with its status and why', () => {
  it('reports a refusal (lease held), a bad request and an unauthenticated one', async () => {
    const t = taskApp(store);
    const seen = record(t);
    const key = newKey();
    await store.transaction(async (tx) => {
      tx.put(key, { count: 1, lock_ts: new Date(), lock_req: 'someone', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled }, []);
    });
    assert.equal((await t.send(key, 1)).status, 503);
    assert.equal((await t.send('%%%', 1)).status, 400);
    assert.equal((await t.send(key, 1, undefined, { 'x-test-auth': 'wrong' })).status, 401);
    assert.deepEqual(seen.retryLater.map((e) => [e.status, e.reason, e.seq]), [[503, 'held', 1], [400, 'bad-request', undefined], [401, 'unauthenticated', undefined]]);
    assert.ok(seen.retryLater.every((e) => e.path === '/task'));
  });
});

async function waitFor(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 10));
}

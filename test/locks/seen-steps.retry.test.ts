// The duplicate cache and locker.retry() on the Datastore emulator: two Lockers share the store, as
// two instances of a service do. Instance B runs a step that fails for good and remembers it
// failed; instance A (an operator) retries it. The retried step's task, sent at once, runs on B at
// once; so does a task of the step without X-Lock-Send (the step's first task, still being retried
// by Cloud Tasks); a plain duplicate of a failed step is dropped (200) after one read.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { PermanentError } from '../../src/errors/errors';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { deliver, KeptTasks } from '../support/kept-tasks';
import { taskApp } from '../support/task-app';

describe('retry() and the duplicate cache of another instance, on the Datastore emulator', () => {
  const namespace = uniqueNamespace('seen-retry');
  const store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
  let reads = 0;
  const read = store.read.bind(store);
  store.read = async (k) => ((reads += 1), read(k));
  // A task's first read is one lookup of the entity and its step's ledger record (the task is bound to its step).
  const readWithLedger = store.readWithLedger.bind(store);
  store.readWithLedger = async (k, id) => ((reads += 1), readWithLedger(k, id));

  /** Instance A (the operator's) and instance B (which runs the steps), both with the duplicate cache on. */
  async function failedOnB(name: string) {
    const queue = new KeptTasks();
    const a = taskApp(store, { queue });
    const b = taskApp(store, { queue });
    const key = new Key({ namespace, path: ['Counter', name] });
    await a.locker.schedule(key, { count: 0 }, '/task', { order: name });
    const first = queue.last();
    b.behave(() => { throw new PermanentError('card declined'); });
    assert.equal((await deliver(b, first)).status, 200);
    assert.equal((await a.locker.inspect().step(key))?.state, 'failed');
    b.behave(() => {});
    const before = reads;
    const duplicate = await deliver(b, first);
    assert.equal(duplicate.status, 200, 'a plain duplicate of a failed step is dropped');
    assert.match(duplicate.text, /dropped: the step failed for good/);
    assert.equal(reads, before + 1, 'decided on a read of the store, not on what B remembers');
    assert.equal(b.runs.length, 1);
    assert.equal(b.locker.seen.size >= 1, true, 'B remembers the entity (its lock seen failed)');
    return { a, b, key, queue, first };
  }

  it('runs the retried step at once on the instance that saw it fail: the new task carries no delay', async () => {
    const { a, b, key, queue } = await failedOnB('retried-task');
    const result = await a.locker.retry(key);
    assert.equal(result.sent, true);
    const retried = queue.last();
    assert.equal(retried.scheduleTime, undefined, 'sent to run now, not after duplicateCache.ttlMs');
    assert.equal(retried.headers['x-lock-send'], '2');
    const res = await deliver(b, retried);
    assert.equal(res.status, 200);
    assert.equal(b.runs.length, 2, 'the handler ran again');
    assert.equal((await a.locker.inspect().step(key))?.state, 'complete');
  });

  it('runs the retried step on a task without X-Lock-Send too (the first task, still retried by Cloud Tasks); its new task is then a duplicate', async () => {
    const { a, b, key, queue, first } = await failedOnB('first-task-after-retry');
    await a.locker.retry(key);
    const retried = queue.last();
    assert.equal(first.headers['x-lock-send'], undefined);
    const res = await deliver(b, first);
    assert.equal(res.status, 200);
    assert.doesNotMatch(res.text, /dropped/);
    assert.equal(b.runs.length, 2, 'B did not drop it on its memory of the failure');
    assert.equal((await a.locker.inspect().step(key))?.state, 'complete');
    const late = await deliver(b, retried);
    assert.equal(late.status, 200);
    assert.match(late.text, /duplicate of a finished step/);
    assert.equal(b.runs.length, 2, 'the step ran once after the retry');
  });
});

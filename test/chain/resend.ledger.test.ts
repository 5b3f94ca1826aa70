// locker.resend() and the ledger, on both emulators with a manual clock: a stalled step (its task
// lost) is re-sent under the sweep's naming (`<id>-s2-<random>`, X-Lock-Send: 2) with the record's
// send count moved on, while `lock_task` keeps naming the record; the step runs once, its record
// goes, and neither the sweep nor the late first task runs it again.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import type { Store } from '../../src/types';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { deliver, KeptTasks } from '../support/kept-tasks';
import { taskApp } from '../support/task-app';

const MIN = 60_000;
const START = Date.parse('2031-05-06T07:08:09.000Z');

function suite(name: string, makeStore: (namespace: string) => Store): void {
  describe(`resend() keeps the ledger and the lock consistent, on ${name}`, () => {
    it('re-sends a stalled step once, under a new name with its send count; the step runs once, the sweep does not run it again', async () => {
      const namespace = uniqueNamespace('resend');
      const store = makeStore(namespace);
      let now = START;
      const queue = new KeptTasks();
      const app = taskApp(store, { queue, clock: () => now, leaseDuration: MIN, stallAfter: 5 * MIN });
      const key = new Key({ namespace, path: ['Counter', 'lost-task'] });
      const recordOf = (id: string) => store.transaction((tx) => tx.getLedger(key, id));

      await app.locker.schedule(key, { count: 0 }, '/task', { order: 7 });
      const first = queue.last(); // never delivered: the task was lost
      now += 10 * MIN;
      const stalled = await app.locker.inspect().step(key);
      assert.equal(stalled?.state, 'stalled');
      const id = stalled.ledger?.id;
      assert.ok(id);
      assert.equal(stalled.task, id, 'lock_task names the ledger record');
      assert.equal(first.name, id);

      const result = await app.locker.resend(key, { seq: 1 });
      assert.equal(result.sent, true);
      const resent = queue.last();
      assert.equal(queue.tasks.length, 2);
      assert.match(resent.name, new RegExp(`^${id}-s2-[0-9a-f]{12}$`));
      assert.equal(result.task, resent.name);
      assert.equal(resent.headers['x-lock-send'], '2');
      assert.equal(resent.headers['x-lock-seq'], '1');
      assert.equal(resent.path, first.path);
      assert.equal(resent.body, first.body);
      const after = await app.locker.inspect().step(key);
      assert.equal(after?.task, id, 'lock_task still names the record');
      assert.equal(after?.lastProgressAt?.getTime(), START, 'the lock was not written');
      assert.deepEqual([after?.ledger?.id, after?.ledger?.task, after?.ledger?.sends], [id, resent.name, 2]);
      assert.equal(after?.ledger?.sentAt.getTime(), now);
      assert.equal(after?.ledger?.due.getTime(), now + 5 * MIN, 'the sweep looks again stallAfter later');

      const early = await app.locker.sweep();
      assert.equal(early.resent, 0, 'the record is not due: the sweep leaves the re-sent step alone');
      assert.equal(queue.tasks.length, 2);

      const ran = await deliver(app, resent);
      assert.equal(ran.status, 200);
      assert.equal(app.runs.length, 1);
      assert.equal((await app.locker.inspect().step(key))?.state, 'complete');
      for (let i = 0; i < 50 && (await recordOf(id)); i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await recordOf(id), undefined, 'the finished step\'s record, found by lock_task, was removed');

      now += 60 * MIN;
      const later = await app.locker.sweep();
      assert.deepEqual([later.resent, later.failed, later.malformed], [0, 0, 0]);
      assert.equal(queue.tasks.length, 2, 'no third task');
      for (const task of [first, resent]) {
        const late = await deliver(app, task);
        assert.equal(late.status, 200);
        assert.match(late.text, /duplicate of a finished step/);
      }
      assert.equal(app.runs.length, 1, 'the step ran once');
    });

    it('a stalled step re-sent, then stalled again, is re-sent by the sweep as send 3 (the counts go on from the resend)', async () => {
      const namespace = uniqueNamespace('resend-sweep');
      const store = makeStore(namespace);
      let now = START;
      const queue = new KeptTasks();
      const app = taskApp(store, { queue, clock: () => now, leaseDuration: MIN, stallAfter: 5 * MIN });
      const key = new Key({ namespace, path: ['Counter', 'lost-twice'] });
      await app.locker.schedule(key, { count: 0 }, '/task', { order: 8 });
      now += 10 * MIN;
      await app.locker.resend(key);
      const resent = queue.last(); // lost too
      now += 10 * MIN;
      const swept = await app.locker.sweep();
      assert.equal(swept.resent, 1);
      const third = queue.last();
      assert.equal(queue.tasks.length, 3);
      assert.equal(third.headers['x-lock-send'], '3');
      assert.notEqual(third.name, resent.name);
      assert.equal((await app.locker.inspect().step(key))?.ledger?.sends, 3);
      assert.equal((await deliver(app, third)).status, 200);
      assert.equal((await deliver(app, resent)).status, 200);
      assert.equal(app.runs.length, 1);
      assert.equal((await app.locker.inspect().step(key))?.state, 'complete');
    });
  });
}

suite('the Datastore emulator', (namespace) => new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }));
suite('the Firestore emulator', (namespace) => new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] }));

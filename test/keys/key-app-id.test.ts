/**
 * keyAppId defaults to the store's project id, also when `new Datastore()` was built without one
 * and the project id is only found by the client's lookup (here: GOOGLE_CLOUD_PROJECT).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import { Headers, type Queue, type TaskRequest } from '../../src/types';
import { uniqueNamespace } from '../support/emulator';

/** The `app` field of a legacy url-safe key (its first field). */
function appOf(encoded: string): string {
  const bytes = Buffer.from(encoded, 'base64url');
  assert.equal(bytes[0], (13 << 3) | 2, 'the key starts with its app field');
  return bytes.subarray(2, 2 + bytes[1]!).toString('utf8');
}

/** A queue that keeps what it is given. */
class RecordingQueue implements Queue {
  readonly tasks: TaskRequest[] = [];
  async enqueue(task: TaskRequest): Promise<void> {
    this.tasks.push(task);
  }
}

/** A Datastore client on the emulator that knows no project id until it looks one up. */
function clientWithoutProject(project: string): Datastore {
  const saved = { ds: process.env.DATASTORE_PROJECT_ID, gcp: process.env.GOOGLE_CLOUD_PROJECT };
  delete process.env.DATASTORE_PROJECT_ID;
  process.env.GOOGLE_CLOUD_PROJECT = project;
  try {
    return new Datastore();
  } finally {
    if (saved.ds !== undefined) process.env.DATASTORE_PROJECT_ID = saved.ds;
  }
}

describe('keyAppId', () => {
  it("defaults to the project id a DatastoreStore looks up when its client was built without one, also in the first task's X-Lock-Key", async () => {
    const saved = process.env.GOOGLE_CLOUD_PROJECT;
    try {
      const datastore = clientWithoutProject('looked-up-project');
      const store = new DatastoreStore(datastore);
      assert.equal(store.projectId, undefined, 'the client was given no project id');
      const queue = new RecordingQueue();
      const locker = new Locker({ store, queue, authenticate: false });
      const key = datastore.key({ namespace: uniqueNamespace('app-id'), path: ['Counter', 'first'] });
      await locker.schedule(key, { count: 0 }, '/task');
      assert.equal(queue.tasks.length, 1);
      assert.equal(appOf(queue.tasks[0]!.headers[Headers.key]!), 'looked-up-project');
      assert.equal(appOf(locker.encodeKey(key)), 'looked-up-project');
      assert.equal(locker.config.keyAppId, 'looked-up-project');
    } finally {
      if (saved === undefined) delete process.env.GOOGLE_CLOUD_PROJECT;
      else process.env.GOOGLE_CLOUD_PROJECT = saved;
    }
  });

  it('is what is given, without any lookup', async () => {
    let lookups = 0;
    const store = new MemoryStore();
    Object.assign(store, { init: async () => void (lookups += 1) });
    const locker = new Locker({ store, authenticate: false, keyAppId: 's~my-app' });
    await locker.ready;
    assert.equal(lookups, 0);
    assert.equal(appOf(locker.encodeKey(new Datastore({ projectId: 'p' }).key(['A', 1]))), 's~my-app');
  });

  it("is the library's placeholder when the store knows no project id and cannot look one up", async () => {
    const locker = new Locker({ store: new MemoryStore(), authenticate: false });
    await locker.ready;
    assert.equal(locker.config.keyAppId, 'datastore-locker');
  });
});

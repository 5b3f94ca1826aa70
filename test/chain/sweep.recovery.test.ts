/**
 * No step is lost: chains over the real local dispatcher (real HTTP) behind queues that lose
 * tasks, with the sweep on a timer, on the in-memory store and on both Datastore emulators.
 * Every chain completes and every step runs once; ids up to 2^63-1 travel end to end.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, type Key } from '@google-cloud/datastore';
import { keyPath } from '../../src/keys/key-codec';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MemoryStore } from '../../src/store/memory/store';
import type { Store } from '../../src/types';
import { assertRanOnce, chainRig, type ChainRig, type RigTimings } from '../support/chain-rig';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';

const keys = new Datastore({ projectId: 'locker-test' });
const STEPS = 10;

interface Subject {
  name: string;
  open(): { store: Store; namespace: string | undefined };
  /** Longer timings where every round trip is slow (the Firestore emulator takes up to seconds under load). */
  timings?: RigTimings;
  /** Leave out the drop scenario (the forget scenario loses tasks the same way, and more). */
  forgetOnly?: boolean;
}

const subjects: Subject[] = [
  {
    name: 'the in-memory store',
    open: () => ({ store: new MemoryStore(), namespace: undefined }),
    // Round trips take microseconds: shorter leases cannot go stale by accident, and the run stays short.
    timings: { leaseDuration: 1_000, stallAfter: 1_000, sweepIntervalMs: 100 },
    forgetOnly: true,
  },
  {
    name: 'the Datastore emulator',
    open: () => {
      const namespace = uniqueNamespace('recovery');
      return { store: new DatastoreStore(legacyDatastore(), { namespaces: [namespace] }), namespace };
    },
  },
  {
    name: 'the Firestore emulator in Datastore mode',
    open: () => {
      const namespace = uniqueNamespace('recovery');
      const store = new DatastoreStore(firestoreDatastore(), { beginWithFirstRead: false, conditionalWrites: false, namespaces: [namespace] });
      return { store, namespace };
    },
    timings: { leaseDuration: 5_000, stallAfter: 5_000, sweepIntervalMs: 500 },
    forgetOnly: true,
  },
];

const ranOnce = (rig: ChainRig, chains: Key[]): void => assertRanOnce(rig, chains, STEPS);

// The stores run side by side, each with a rig and a namespace of its own: most of a run is
// waiting for the sweep to find what the queue lost.
describe('no step is lost, whatever the queue loses', { concurrency: true }, () => {
  for (const subject of subjects) {
    describe(`no step is lost, on ${subject.name}`, { concurrency: 1 }, () => {
      let rig: ChainRig | undefined;
      after(async () => { await rig?.close(); });
      const chainsIn = (namespace: string | undefined, n: number, tag: string): Key[] =>
        Array.from({ length: n }, (_, i) => keys.key({ namespace, path: ['Chain', `${tag}-${i}-${Date.now()}`] }));

      it('a queue that silently drops every 4th task: every chain completes, each step once', { skip: subject.forgetOnly }, async () => {
        const { store, namespace } = subject.open();
        rig = await chainRig({ store, steps: STEPS, loss: { kind: 'drop', every: 4 }, timings: subject.timings });
        const chains = chainsIn(namespace, 3, 'drop');
        for (const key of chains) await rig.start(key);
        await rig.allComplete(chains, 180_000);
        assert.ok(rig.queue.lost.length >= 7, `tasks were lost (${rig.queue.lost.length})`);
        ranOnce(rig, chains);
        await rig.close();
        rig = undefined;
      });

      it('a queue that answers ALREADY_EXISTS for a lost task\'s name: re-deliveries use new names, every chain completes', async () => {
        const { store, namespace } = subject.open();
        rig = await chainRig({ store, steps: STEPS, loss: { kind: 'forget', every: 3 }, timings: subject.timings });
        const chains = chainsIn(namespace, 3, 'forget');
        for (const key of chains) await rig.start(key);
        await rig.allComplete(chains, 180_000);
        assert.ok(rig.queue.lost.length >= 9, `tasks were lost (${rig.queue.lost.length})`);
        assert.deepEqual(rig.queue.hidden, [], 'no re-delivery reused a lost name');
        assert.equal(new Set(rig.queue.names).size, rig.queue.names.length, 'every task name is new');
        ranOnce(rig, chains);
        await rig.close();
        rig = undefined;
      });
    });
  }
});

describe('no step is lost: extra deliveries are harmless', () => {
  let rig: ChainRig | undefined;
  after(async () => { await rig?.close(); });

  it('every task delivered twice (the copy a little later): each step still runs once, every copy is dropped', async () => {
    const namespace = uniqueNamespace('doubled');
    const store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
    rig = await chainRig({ store, steps: STEPS, loss: { kind: 'double', every: 1 } });
    const chains = Array.from({ length: 3 }, (_, i) => keys.key({ namespace, path: ['Chain', `double-${i}`] }));
    for (const key of chains) await rig.start(key);
    await rig.allComplete(chains);
    await rig.idle(); // the last copies were still on their way
    ranOnce(rig, chains);
    const dropped = rig.logger.lines.filter((l) => l.message === 'task dropped').length;
    assert.ok(dropped >= chains.length * STEPS, `every copy was dropped (${dropped})`);
  });
});

describe('numeric ids up to 2^63-1, end to end', () => {
  let rig: ChainRig | undefined;
  let store: Store;
  let namespace: string;
  before(() => {
    namespace = uniqueNamespace('bigid');
    store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
  });
  after(async () => { await rig?.close(); });

  it('a 10-step chain completes on keys with ids 2^53, 2^53+1 and 2^63-1, with a namespace and ancestors', async () => {
    rig = await chainRig({ store, steps: STEPS });
    const ids = ['9007199254740992', '9007199254740993', '9223372036854775807'];
    const chains = ids.map((id) => keys.key({ namespace, path: ['Shop', Datastore.int(id), 'Chain', Datastore.int(id)] }));
    for (const key of chains) await rig.start(key);
    await rig.allComplete(chains);
    ranOnce(rig, chains);
    for (const [i, key] of chains.entries()) {
      assert.equal(keyPath(key), `Shop:${ids[i]}/Chain:${ids[i]}`);
      assert.equal((await store.get(key))?.lock_seq, STEPS + 1);
    }
  });

  it('schedule() refuses a key it could not deliver, before writing anything', async () => {
    // A namespace of its own: the chains above may still be clearing their last ledger records.
    const own = uniqueNamespace('bigid-refused');
    const ownStore = new DatastoreStore(legacyDatastore(), { namespaces: [own] });
    const refusing = await chainRig({ store: ownStore, steps: 1 });
    try {
      const unsafe = keys.key({ namespace: own, path: ['Chain', 2 ** 53 + 2] });
      await assert.rejects(refusing.locker.schedule(unsafe, {}, '/step'), (e: unknown) => e instanceof TypeError && /cannot be delivered/.test(e.message));
      const tooBig = keys.key({ namespace: own, path: ['Chain', Datastore.int('9223372036854775808')] });
      await assert.rejects(refusing.locker.schedule(tooBig, {}, '/step'), /2\^63-1/);
      assert.equal((await ownStore.listDue(new Date(Date.now() + 3_600_000), 10)).records.length, 0, 'no ledger record was written');
    } finally {
      await refusing.close();
    }
  });
});

// locker.scheduleMany() on the legacy Datastore emulator (conditional commits with baseVersion),
// with a store built with no option but the namespace it sweeps, and what a call sends on each
// emulator (the Firestore emulator's suite run is schedule-many.firestore.test.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { scheduleManySuite } from './schedule-many-suite';
import { spyClient } from '../support/datastore-spy';
import { RecordingQueue } from '../support/recording-queue';
import { keys } from '../support/task-app';
import { Locker } from '../../src/locker';
import { StoreRejectedError } from '../../src/errors/errors';
import { BATCH } from '../../src/chain/schedule-many';
import { DatastoreStore } from '../../src/store/datastore/store';
import { legacyDatastore, firestoreDatastore, uniqueNamespace } from '../support/emulator';
import { namespacedStore } from '../support/namespaced-store';
import { scaled } from '../support/test-scale';

scheduleManySuite('the Datastore emulator', namespacedStore(legacyDatastore, 'bulk'), { chains: scaled(300, 1_000) }); // the Firestore emulator's run: schedule-many.firestore.test.ts

describe('locker.scheduleMany() on Datastore: what it sends', () => {
  it('on the legacy emulator: two lookups and two NON_TRANSACTIONAL commits per batch of new chains (records; entities with their own baseVersion, each with its kickoff record; the records looked up again)', async () => {
    const spy = spyClient(legacyDatastore());
    const namespace = uniqueNamespace('bulk-rpc');
    const store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace], client: spy.client, conditionalWrites: true, beginWithFirstRead: true }); // no backend check: only the call's RPCs are counted
    const queue = new RecordingQueue();
    const locker = new Locker({ store, queue, authenticate: false });
    try {
      const items = Array.from({ length: 1_000 }, (_, i) => ({ key: keys.key({ namespace, path: ['Invoice', `rpc-${i}`] }), entity: { i }, path: '/step' }));
      const result = await locker.scheduleMany(items);
      assert.equal(result.started, 1_000);
      const batches = Math.ceil(1_000 / BATCH);
      // Per call, not per item: the kickoff's LockerKickoffRun record, read and written in one
      // transaction (a lookup that begins it, a commit) when the call begins and again when it ends.
      const perCall = 2;
      // The RPCs the emulator answered: a loaded legacy emulator now and then answers a commit
      // ABORTED (contention) and the store sends it again, so an aborted one is not counted.
      // A loaded emulator may also answer a lookup with some keys deferred (Lookup's `deferred`):
      // the store asks for those again, one more lookup for each such answer, counted here.
      const calls = spy.calls.filter((_, i) => !spy.aborted.has(i));
      const sent = spy.sent.filter((_, i) => !spy.aborted.has(i));
      const askedAgain = [...spy.deferred].filter((i) => !spy.aborted.has(i)).length;
      assert.deepEqual(calls.filter((m) => m === 'lookup').length, 2 * batches + perCall + askedAgain, `two lookups per batch: the entities and their kickoff records; after the entities' commit, their ledger records again (none was cleared: nothing more); and the kickoff's record, twice (${askedAgain} answers with deferred keys, each asked again; ${spy.aborted.size} RPCs answered ABORTED)`);
      assert.deepEqual(calls.filter((m) => m === 'commit').length, 2 * batches + perCall, 'two commits per batch: the records, then the entities with their kickoff records; and the kickoff\'s record, twice');
      assert.equal(calls.length, 4 * batches + 2 * perCall + askedAgain, 'nothing else: 32 RPCs per 1,000 chains, and 4 per call');
      const runCommits = sent.filter((r) => r.method === 'commit' && r.request.mutations?.some((m) => (m.upsert as { key: { path: { kind: string }[] } } | undefined)?.key.path[0]!.kind === 'LockerKickoffRun'));
      assert.equal(runCommits.length, perCall, 'the kickoff\'s record is written when the call begins and when it ends');
      for (const commit of runCommits) assert.equal(commit.request.mutations!.length, 1, 'alone in its commit');
      const commits = sent.filter((r) => r.method === 'commit' && !runCommits.includes(r));
      for (const commit of commits) assert.equal(commit.request.mode, 'NON_TRANSACTIONAL');
      const entityUpserts = commits.flatMap((c) => c.request.mutations ?? []).filter((m) => (m.upsert as { key: { path: { kind: string }[] } }).key.path[0]!.kind === 'Invoice');
      assert.equal(entityUpserts.length, 1_000);
      assert.ok(entityUpserts.every((m) => m.baseVersion === '0'), 'every new entity is written only if still absent');
      const kickoffRecords = commits.flatMap((c) => c.request.mutations ?? []).filter((m) => (m.upsert as { key: { path: { kind: string }[] } }).key.path[0]!.kind === 'LockerKickoff');
      assert.equal(kickoffRecords.length, 1_000, 'each chain started is recorded');
      for (const commit of commits.filter((c) => c.request.mutations?.some((m) => (m.upsert as { key: { path: { kind: string }[] } }).key.path[0]!.kind === 'LockerKickoff'))) {
        const kinds = new Set(commit.request.mutations!.map((m) => (m.upsert as { key: { path: { kind: string }[] } }).key.path[0]!.kind));
        assert.deepEqual([...kinds].sort(), ['Invoice', 'LockerKickoff'], 'a kickoff record rides in its entity\'s commit');
        assert.ok(commit.request.mutations!.every((m) => m.baseVersion === '0'), 'and, like its entity, is written only if still absent');
      }
      assert.equal(queue.tasks.length, 1_000);
    } finally {
      await store.shutdown();
      await spy.close();
    }
  });

  it('on the Firestore emulator: an entity the server refuses (too large) fails alone; its batch neighbours start', { timeout: 120_000 }, async () => {
    const namespace = uniqueNamespace('bulk-large');
    const store = new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] });
    const queue = new RecordingQueue();
    const locker = new Locker({ store, queue, authenticate: false });
    try {
      const large = new Set([3, 120, 250]);
      const items = Array.from({ length: 300 }, (_, i) => ({
        key: keys.key({ namespace, path: ['Invoice', `large-${i}`] }),
        entity: large.has(i) ? { text: 'x'.repeat(1_100_000) } : { i },
        path: '/step',
      }));
      const result = await locker.scheduleMany(items);
      assert.deepEqual([result.started, result.failed], [297, 3]);
      for (const i of large) {
        const r = result.results[i]!;
        assert.ok(r.status === 'failed' && r.error instanceof StoreRejectedError, `item ${i}: ${r.status}`);
      }
      const stored = await store.readMany(items.map((item) => item.key));
      stored.forEach((read, i) => assert.equal(read.properties === undefined, large.has(i), `item ${i} written: ${!large.has(i)}`));
    } finally {
      await store.shutdown();
    }
  });
});

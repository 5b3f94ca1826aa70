// Knowing the backend: the store checks once, on scratch entities of its own kind, that a stale
// baseVersion is refused and that a transaction begun by its first read can commit, and falls back
// (logging why) where not. A backend that ignores baseVersion is played by a seam in front of the
// real legacy emulator that drops the condition from every mutation: the check must catch it, and
// fencing must hold anyway.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { PROBE_KIND } from '../../src/store/datastore/backend';
import type { Logger } from '../../src/types';
import { spyClient, type SentRpc } from '../support/datastore-spy';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';

/** A logger that keeps its warnings. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info() {}, warn: (message) => void warnings.push(message), error: (message) => void warnings.push(message) };
}

/** Drops `baseVersion` from every mutation of every commit: a backend that ignores it. */
function dropBaseVersion(method: string, request: SentRpc['request']): SentRpc['request'] {
  if (method !== 'commit' || !request.mutations) return request;
  return { ...request, mutations: request.mutations.map(({ baseVersion: _dropped, ...mutation }) => mutation) };
}

/** True when `rpc` touches a scratch entity of the check. */
function isProbe(rpc: SentRpc): boolean {
  return JSON.stringify(rpc.request).includes(PROBE_KIND);
}

describe('DatastoreStore: knowing the backend', () => {
  it('trusts the legacy emulator after checking it, without a warning: a compare-and-swap is then one commit', async () => {
    const datastore = legacyDatastore();
    const spy = spyClient(datastore);
    const logger = recordingLogger();
    const store = new DatastoreStore(datastore, { client: spy.client, logger });
    const k = new Key({ namespace: uniqueNamespace('backend'), path: ['Order', 'trusted'] });
    await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
    const snapshot = await store.read(k);
    assert.ok(snapshot);
    assert.ok(spy.sent.some(isProbe), 'the check ran');
    const probes = spy.sent.filter(isProbe).map((rpc) => rpc.method);
    assert.deepEqual(probes.sort(), ['commit', 'commit', 'commit', 'commit', 'commit', 'lookup'].sort());
    spy.clear();
    assert.ok(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []));
    assert.deepEqual(spy.calls, ['commit'], 'one commit');
    assert.equal(spy.sent[0]?.request.mode, 'NON_TRANSACTIONAL');
    assert.deepEqual(logger.warnings, []);
    // The scratch entities are gone.
    const leftovers = await datastore.runQuery(datastore.createQuery(PROBE_KIND).select('__key__'));
    assert.deepEqual(leftovers[0], [], 'no scratch entity is left');
    await spy.close();
  });

  it('catches a backend that ignores baseVersion, logs why once, and fences with transactions: one of 20 wins', async () => {
    const datastore = legacyDatastore();
    const spy = spyClient(datastore, { rewrite: dropBaseVersion });
    const logger = recordingLogger();
    const store = new DatastoreStore(datastore, { client: spy.client, logger });
    const k = new Key({ namespace: uniqueNamespace('backend'), path: ['Step', 'contended'] });
    await store.transaction(async (tx) => tx.put(k, { lock_req: '', lock_seq: 1 }, []));
    const snapshot = await store.read(k);
    assert.ok(snapshot);
    const takes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.replaceIfUnchanged(k, snapshot, { lock_req: `attempt-${i}`, lock_seq: 1 }, [])),
    );
    const winners = takes.flatMap((taken, i) => (taken ? [`attempt-${i}`] : []));
    assert.equal(winners.length, 1, `exactly one take wins, not ${JSON.stringify(winners)}`);
    assert.deepEqual(await store.get(k), { lock_req: winners[0], lock_seq: 1 });
    assert.equal(logger.warnings.filter((w) => /base_version/.test(w)).length, 1, `one warning about baseVersion: ${logger.warnings.join(' | ')}`);
    const casCommits = spy.sent.filter((rpc) => rpc.method === 'commit' && !isProbe(rpc) && rpc.request.mode === 'TRANSACTIONAL');
    assert.ok(casCommits.length >= 1, 'the winner committed in a transaction');
    // Stale snapshot after the fact: refused too.
    assert.equal(await store.replaceIfUnchanged(k, snapshot, { lock_req: 'late', lock_seq: 1 }, []), undefined);
    await spy.close();
  });

  it('finds both quirks of the Firestore emulator and logs each once; the store then works without options', { timeout: 60_000 }, async () => {
    const datastore = firestoreDatastore();
    const spy = spyClient(datastore);
    const logger = recordingLogger();
    const store = new DatastoreStore(datastore, { client: spy.client, logger });
    const k = new Key({ namespace: uniqueNamespace('backend'), path: ['Order', 'firestore'] });
    await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
    const snapshot = await store.read(k);
    assert.ok(snapshot);
    assert.ok(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []));
    assert.equal(await store.replaceIfUnchanged(k, snapshot, { n: 2 }, []), undefined, 'a stale snapshot is refused');
    assert.deepEqual(await store.get(k), { n: 1 });
    assert.equal(logger.warnings.length, 2, logger.warnings.join(' | '));
    assert.ok(logger.warnings.some((w) => /base_version/.test(w)));
    assert.ok(logger.warnings.some((w) => /first read/.test(w)));
    spy.clear();
    await store.transaction(async (tx) => {
      await tx.get(k);
    });
    assert.equal(spy.calls[0], 'beginTransaction', 'transactions begin with beginTransaction here');
    await spy.close();
  });

  it('skips the check when both options are given: the first compare-and-swap sends only itself', async () => {
    const datastore = legacyDatastore();
    const spy = spyClient(datastore);
    const store = new DatastoreStore(datastore, { client: spy.client, conditionalWrites: true, beginWithFirstRead: true });
    const k = new Key({ namespace: uniqueNamespace('backend'), path: ['Order', 'overridden'] });
    await store.transaction(async (tx) => tx.put(k, { n: 0 }, []));
    const snapshot = await store.read(k);
    assert.ok(snapshot);
    assert.ok(await store.replaceIfUnchanged(k, snapshot, { n: 1 }, []));
    assert.equal(spy.sent.filter(isProbe).length, 0, 'no scratch entity was touched');
    assert.deepEqual(spy.calls, ['beginTransaction', 'commit', 'lookup', 'commit']);
    await spy.close();
  });
});

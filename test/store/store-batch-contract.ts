/**
 * The store contract for many entities at once (`readMany`, `replaceMany`), part of the store
 * contract (`store-contract.ts`): run against the in-memory store and the Datastore store on both
 * emulators, with and without conditional writes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { StoreRejectedError } from '../../src/errors/errors';
import { withContentionRetry } from '../../src/locks/retry';
import type { LedgerRecord, Store } from '../../src/types';
import type { MakeSubject } from './store-contract';

let counter = 0;

function recordFor(k: Key, id: string): LedgerRecord {
  const now = new Date('2024-01-01T00:00:00.000Z');
  return { id, key: k, seq: 1, chain: 'bulk-chain', path: '/step', body: '{"n":1}', createdAt: now, task: id, sends: 1, sentAt: now, failures: 0, due: new Date(now.getTime() + 60_000) };
}

async function ledgerIds(store: Store, namespace: string): Promise<string[]> {
  const due = await store.listDue(new Date('2100-01-01T00:00:00.000Z'), 1_000);
  return due.records.filter((r) => r.key.namespace === namespace).map((r) => r.id).sort();
}

/** The batch part of the contract, for stores that have it. */
export function batchContract(make: MakeSubject): void {
  describe('many at once: readMany and replaceMany', () => {
    const fresh = async (): Promise<{ store: Store; ns: string; k: (name: string) => Key }> => {
      counter += 1;
      const ns = `batch-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
      const { store } = await make([ns]);
      return { store, ns, k: (name) => new Key({ namespace: ns, path: ['Order', name] }) };
    };

    it('reads present and absent entities in one call, in the keys\' order', async () => {
      const { store, k } = await fresh();
      if (!store.readMany) return;
      await store.transaction(async (tx) => { tx.put(k('b'), { n: 2 }, []); });
      const reads = await store.readMany([k('a'), k('b'), k('c')]);
      assert.deepEqual(reads.map((r) => r.properties), [undefined, { n: 2 }, undefined]);
      assert.deepEqual(reads.map((r) => r.key.name), ['a', 'b', 'c']);
    });

    it('writes each entity still at the version read, with its record; a changed one conflicts, a refused one fails, alone', async () => {
      const { store, ns, k } = await fresh();
      if (!store.readMany || !store.replaceMany) return;
      // The set-up's writes retry ContentionError, as a caller's do: the legacy emulator, loaded and
      // some minutes old, aborts the second of two commits to one entity close together ("too much
      // contention": reproduced 2026-11-29 on an emulator serving this file a fourth time, load 10).
      await withContentionRetry(() => store.transaction(async (tx) => { tx.put(k('kept'), { n: 1 }, []); tx.put(k('changed'), { n: 1 }, []); }));
      const [absent, kept, changed, created, refused] = await store.readMany([k('absent'), k('kept'), k('changed'), k('created'), k('refused')]);
      await withContentionRetry(() => store.transaction(async (tx) => { tx.put(k('changed'), { n: 'meanwhile' }, []); tx.put(k('created'), { n: 'meanwhile' }, []); }));
      const outcomes = await store.replaceMany([
        { read: absent!, properties: { n: 10 }, excludeFromIndexes: [], record: recordFor(k('absent'), 'r-absent') },
        { read: kept!, properties: { n: 11 }, excludeFromIndexes: [], record: recordFor(k('kept'), 'r-kept') },
        { read: changed!, properties: { n: 12 }, excludeFromIndexes: [], record: recordFor(k('changed'), 'r-changed') },
        { read: created!, properties: { n: 13 }, excludeFromIndexes: [], record: recordFor(k('created'), 'r-created') },
        { read: refused!, properties: { n: 14n }, excludeFromIndexes: [], record: recordFor(k('refused'), 'r-refused') },
      ]);
      // Each outcome with its error's name and message, so that a failure shows why a write was not written.
      const told = outcomes.map((o) => (o.outcome === 'error' ? `error: ${o.error.name}: ${o.error.message}` : o.outcome));
      assert.deepEqual(outcomes.slice(0, 4).map((o) => o.outcome), ['written', 'written', 'conflict', 'conflict'], `outcomes: ${JSON.stringify(told)}`);
      const last = outcomes[4]!;
      assert.ok(last.outcome === 'error' && last.error instanceof StoreRejectedError, `a bigint is refused: ${JSON.stringify(last)}`);
      const after = await store.readMany([k('absent'), k('kept'), k('changed'), k('created'), k('refused')]);
      assert.deepEqual(after.map((r) => r.properties?.n), [10, 11, 'meanwhile', 'meanwhile', undefined]);
      const ids = await ledgerIds(store, ns);
      for (const id of ['r-absent', 'r-kept']) assert.ok(ids.includes(id), `the record of a written entity is stored: ${id}`);
      assert.ok(!ids.includes('r-refused'), 'a refused write stores no record');
    });
  });
}

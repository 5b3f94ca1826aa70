/**
 * The lock query's contract (`Store.queryLocks`): equality on `lock_state`, range and order on
 * `lock_ts`, one kind in one namespace (at any depth, as a Datastore kind query), pages joined
 * by cursors without loss or repeat. Run against the in-memory store, the Datastore store on both
 * emulators and the Firestore store in Native mode.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import type { LockQuery } from '../../src/store/lock-query';
import { StepState, type Properties, type Store } from '../../src/types';

const T0 = Date.parse('2031-01-01T00:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);

function lock(state: string, minutes: number, extra: Properties = {}): Properties {
  return { lock_ts: at(minutes), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: state, ...extra };
}

/** Writes entities as the Locker does (its lock fields kept out of indexes, `lock_state` and `lock_ts` indexed). */
async function seed(store: Store, entities: Array<[Key, Properties]>): Promise<void> {
  await store.transaction(async (tx) => {
    for (const [key, props] of entities) tx.put(key, props, UNINDEXED_LOCK_FIELDS);
  });
}

async function all(store: Store, query: Omit<LockQuery, 'cursor'>): Promise<{ names: string[]; pages: number }> {
  const names: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await store.queryLocks!({ ...query, ...(cursor ? { cursor } : {}) });
    pages += 1;
    for (const entity of page.entities) names.push(String(entity.key.name));
    cursor = page.cursor;
    assert.ok(pages < 50, 'pagination ends');
  } while (cursor);
  return { names, pages };
}

let counter = 0;

/** Runs the contract on the stores `make` returns. */
export function storeQueryContract(name: string, make: () => Store): void {
  describe(`${name}: queryLocks`, () => {
    const fresh = () => {
      counter += 1;
      const namespace = `query-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
      return { store: make(), namespace, key: (kind: string, id: string) => new Key({ namespace, path: [kind, id] }) };
    };

    it('finds one state of one kind in one namespace, oldest or newest first, with its properties', async () => {
      const { store, namespace, key } = fresh();
      await seed(store, [
        [key('Order', 'f2'), { total: 2, ...lock(StepState.failed, 2, { lock_err: 'Error: two' }) }],
        [key('Order', 'f1'), { total: 1, ...lock(StepState.failed, 1) }],
        [key('Order', 'f3'), { total: 3, ...lock(StepState.failed, 3) }],
        [key('Order', 's1'), lock(StepState.scheduled, 0)],
        [key('Order', 'c1'), lock(StepState.complete, 0)],
        [key('Invoice', 'f9'), lock(StepState.failed, 0)],
        [new Key({ namespace: `${namespace}-other`, path: ['Order', 'f8'] }), lock(StepState.failed, 0)],
      ]);
      const oldest = await store.queryLocks!({ kind: 'Order', namespace, state: StepState.failed, order: 'asc', limit: 10 });
      assert.deepEqual(oldest.entities.map((e) => e.key.name), ['f1', 'f2', 'f3']);
      assert.equal(oldest.cursor, undefined);
      assert.equal(oldest.entities[1]!.properties.total, 2);
      assert.equal(oldest.entities[1]!.properties.lock_err, 'Error: two');
      assert.equal((oldest.entities[1]!.properties.lock_ts as Date).getTime(), at(2).getTime());
      assert.equal(oldest.entities[1]!.key.namespace, namespace);
      const newest = await store.queryLocks!({ kind: 'Order', namespace, state: StepState.failed, order: 'desc', limit: 10 });
      assert.deepEqual(newest.entities.map((e) => e.key.name), ['f3', 'f2', 'f1']);
      const scheduled = await store.queryLocks!({ kind: 'Order', namespace, state: StepState.scheduled, order: 'asc', limit: 10 });
      assert.deepEqual(scheduled.entities.map((e) => e.key.name), ['s1']);
    });

    it('keeps to a range of lock_ts: before (exclusive) and from (inclusive)', async () => {
      const { store, namespace, key } = fresh();
      await seed(store, [0, 1, 2, 3, 4].map((m) => [key('Step', `m${m}`), lock(StepState.scheduled, m)] as [Key, Properties]));
      const base = { kind: 'Step', namespace, state: StepState.scheduled, limit: 10 } as const;
      const before = await store.queryLocks!({ ...base, order: 'asc', tsBefore: at(2) });
      assert.deepEqual(before.entities.map((e) => e.key.name), ['m0', 'm1']);
      const from = await store.queryLocks!({ ...base, order: 'desc', tsFrom: at(2) });
      assert.deepEqual(from.entities.map((e) => e.key.name), ['m4', 'm3', 'm2']);
      const between = await store.queryLocks!({ ...base, order: 'asc', tsFrom: at(1), tsBefore: at(3) });
      assert.deepEqual(between.entities.map((e) => e.key.name), ['m1', 'm2']);
    });

    it('pages with cursors, every entity once, in both orders', async () => {
      const { store, namespace, key } = fresh();
      const names = Array.from({ length: 7 }, (_, i) => `p${i}`);
      await seed(store, names.map((n, i) => [key('Page', n), lock(StepState.complete, i)] as [Key, Properties]));
      const asc = await all(store, { kind: 'Page', namespace, state: StepState.complete, order: 'asc', limit: 3 });
      assert.deepEqual(asc.names, names);
      assert.ok(asc.pages >= 3, `three pages or more, got ${asc.pages}`);
      const desc = await all(store, { kind: 'Page', namespace, state: StepState.complete, order: 'desc', limit: 2 });
      assert.deepEqual(desc.names, [...names].reverse());
    });

    it('skips entities without a lock_state or lock_ts (never written by this library)', async () => {
      const { store, namespace, key } = fresh();
      await seed(store, [
        [key('Go', 'go'), { lock_ts: at(0), lock_req: '', lock_seq: 3, lock_try: 0 }],
        [key('Go', 'plain'), { note: 'no lock at all' }],
        [key('Go', 'ours'), lock(StepState.scheduled, 0)],
      ]);
      const page = await store.queryLocks!({ kind: 'Go', namespace, state: StepState.scheduled, order: 'asc', limit: 10 });
      assert.deepEqual(page.entities.map((e) => e.key.name), ['ours']);
    });

    it('keeps to one run (lock_run) when asked, in both orders and across pages', async () => {
      const { store, namespace, key } = fresh();
      await seed(store, [
        ...[0, 1, 2, 3].map((m) => [key('Run', `a${m}`), lock(StepState.scheduled, m, { lock_run: 'k:a' })] as [Key, Properties]),
        [key('Run', 'b0'), lock(StepState.scheduled, 0, { lock_run: 'k:b' })],
        [key('Run', 'none'), lock(StepState.scheduled, 1)],
        [key('Run', 'a-done'), lock(StepState.complete, 1, { lock_run: 'k:a' })],
      ]);
      const base = { kind: 'Run', namespace, state: StepState.scheduled, run: 'k:a' } as const;
      assert.deepEqual((await all(store, { ...base, order: 'asc', limit: 3 })).names, ['a0', 'a1', 'a2', 'a3']);
      assert.deepEqual((await store.queryLocks!({ ...base, order: 'desc', limit: 1 })).entities.map((e) => e.key.name), ['a3']);
      assert.deepEqual((await store.queryLocks!({ ...base, order: 'asc', limit: 10, tsFrom: at(2) })).entities.map((e) => e.key.name), ['a2', 'a3']);
      const all4 = await store.queryLocks!({ kind: 'Run', namespace, state: StepState.scheduled, order: 'asc', limit: 10 });
      assert.equal(all4.entities.length, 6, 'without run, every scheduled one');
    });

    it('lists, counts and finds a kind below an ancestor too, in its namespace only (the default one too), across pages', async () => {
      const { store, namespace } = fresh();
      const kind = `Nested${Math.random().toString(36).slice(2, 8)}`; // the default namespace is shared: a kind of its own
      const inNs = (...path: string[]) => new Key({ namespace, path });
      const inDefault = (...path: string[]) => new Key({ path });
      const chain = { lock_chain: `chain-${kind}` };
      await seed(store, [
        [inNs(kind, 'top'), lock(StepState.scheduled, 0)],
        [inNs('Order', 'o1', kind, 'under'), lock(StepState.scheduled, 1, { lock_run: 'k:n', ...chain })],
        [inNs('Shop', 's', 'Order', 'o2', kind, 'deep'), lock(StepState.scheduled, 2, chain)],
        [inNs('Order', 'o1', kind, 'done'), lock(StepState.complete, 3)],
        [new Key({ namespace: `${namespace}-other`, path: ['Order', 'o1', kind, 'other-ns'] }), lock(StepState.scheduled, 1, { lock_run: 'k:n', ...chain })],
        [inDefault(kind, 'd-top'), lock(StepState.scheduled, 4)],
        [inDefault('Order', 'o1', kind, 'd-under'), lock(StepState.scheduled, 5, chain)],
      ]);
      const base = { kind, namespace, state: StepState.scheduled } as const;
      assert.deepEqual((await all(store, { ...base, order: 'asc', limit: 2 })).names, ['top', 'under', 'deep']);
      assert.deepEqual((await all(store, { ...base, order: 'desc', limit: 1 })).names, ['deep', 'under', 'top']);
      const under = (await store.queryLocks!({ ...base, order: 'asc', limit: 10, tsFrom: at(1) })).entities[0]!;
      assert.equal(under.key.namespace, namespace);
      assert.deepEqual(under.key.path, ['Order', 'o1', kind, 'under'], 'the key keeps its ancestor');
      assert.deepEqual((await all(store, { ...base, run: 'k:n', order: 'asc', limit: 10 })).names, ['under']);
      assert.deepEqual(await store.countLocks!({ ...base, cap: 100 }), { count: 3, exact: true });
      assert.deepEqual(await store.countLocks!({ ...base, cap: 100, run: 'k:n' }), { count: 1, exact: true });
      assert.deepEqual((await all(store, { kind, state: StepState.scheduled, order: 'asc', limit: 1 })).names, ['d-top', 'd-under'], 'the default namespace');
      assert.deepEqual(await store.countLocks!({ kind, namespace: '', state: StepState.scheduled, cap: 100 }), { count: 2, exact: true });
      if (store.findKeys) {
        const found = await store.findKeys({ kind, namespace, property: 'lock_chain', equals: chain.lock_chain, limit: 10 });
        assert.deepEqual(found.map((k) => String(k.name)).sort(), ['deep', 'under']);
        const inDefaultFound = await store.findKeys({ kind, namespace: '', property: 'lock_chain', equals: chain.lock_chain, limit: 10 });
        assert.deepEqual(inDefaultFound.map((k) => String(k.name)), ['d-under']);
      }
    });

    it('counts a state, a range of lock_ts and a run, up to a cap (a count past it is not exact)', async () => {
      const { store, namespace, key } = fresh();
      await seed(store, [
        ...Array.from({ length: 12 }, (_, i) => [key('Count', `f${i}`), lock(StepState.failed, i, i < 5 ? { lock_run: 'k:r' } : {})] as [Key, Properties]),
        [key('Count', 's0'), lock(StepState.scheduled, 0)],
        [key('Other', 'f0'), lock(StepState.failed, 0)],
        [new Key({ namespace: `${namespace}-other`, path: ['Count', 'f0'] }), lock(StepState.failed, 0)],
        [key('Count', 'go'), { lock_ts: at(0), lock_req: '', lock_seq: 3, lock_try: 0 }],
      ]);
      const base = { kind: 'Count', namespace, state: StepState.failed } as const;
      assert.deepEqual(await store.countLocks!({ ...base, cap: 100 }), { count: 12, exact: true });
      assert.deepEqual(await store.countLocks!({ ...base, cap: 12 }), { count: 12, exact: true }, 'exactly at the cap is exact');
      assert.deepEqual(await store.countLocks!({ ...base, cap: 10 }), { count: 10, exact: false });
      assert.deepEqual(await store.countLocks!({ ...base, cap: 100, tsFrom: at(3), tsBefore: at(7) }), { count: 4, exact: true });
      assert.deepEqual(await store.countLocks!({ ...base, cap: 100, run: 'k:r' }), { count: 5, exact: true });
      assert.deepEqual(await store.countLocks!({ ...base, cap: 100, run: 'k:none' }), { count: 0, exact: true });
      assert.deepEqual(await store.countLocks!({ kind: 'Count', namespace, state: StepState.scheduled, cap: 100 }), { count: 1, exact: true });
      await assert.rejects(store.countLocks!({ ...base, cap: 0 }), RangeError);
      await assert.rejects(store.countLocks!({ ...base, cap: 100_001 }), RangeError);
    });

    it('counts past a thousand, or says "at least" where the store bounds a count lower (keys-only counting)', async () => {
      const { store, namespace, key } = fresh();
      const entities = Array.from({ length: 1_203 }, (_, i) => [key('Many', `m${i}`), lock(StepState.complete, i % 60)] as [Key, Properties]);
      const batches: Array<Array<[Key, Properties]>> = [];
      for (let i = 0; i < entities.length; i += 25) batches.push(entities.slice(i, i + 25)); // 25 entity groups a transaction at most
      for (let i = 0; i < batches.length; i += 8) await Promise.all(batches.slice(i, i + 8).map((b) => seed(store, b)));
      const wide = await store.countLocks!({ kind: 'Many', namespace, state: StepState.complete, cap: 10_000 });
      if (wide.exact) assert.equal(wide.count, 1_203);
      else assert.ok(wide.count >= 1_000 && wide.count < 1_203, `a bounded count: at least ${wide.count}`);
      const capped = await store.countLocks!({ kind: 'Many', namespace, state: StepState.complete, cap: 900 });
      assert.deepEqual(capped, { count: 900, exact: false });
    });

    it('refuses a malformed query before asking the backend', async () => {
      const { store, namespace } = fresh();
      await assert.rejects(store.queryLocks!({ kind: '', namespace, state: StepState.failed, order: 'asc', limit: 1 }), RangeError);
      await assert.rejects(store.queryLocks!({ kind: 'A', namespace, state: StepState.failed, order: 'asc', limit: 0 }), RangeError);
      await assert.rejects(store.queryLocks!({ kind: '__kind__', namespace, state: StepState.failed, order: 'asc', limit: 1 }), RangeError);
    });
  });
}

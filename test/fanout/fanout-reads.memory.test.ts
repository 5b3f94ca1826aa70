// The fan-out's completion check reads a bounded number of records per settle, however many
// children there are, and makes no query (a query per settle scanned every child on the in-memory
// store and the legacy emulator, and its index lags on legacy Datastore): a store wrapper counts
// the reads of the fan-out's records while 1,000 children (ten pages) settle.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { MemoryStore } from '../../src/store/memory/store';
import { keyPath } from '../../src/keys/key-codec';
import type { KeyQuery, Store, StoreTransaction, VersionedRead } from '../../src/types';
import { fanRig, type FanRig } from '../support/fan-rig';

const CHILDREN = 1_000;
/** Reads of fan-out records (child, page, done mark) per child over the whole fan-out, at most. */
const READS_PER_CHILD = 40;

/** The in-memory store, counting the fan-out records read (by kind) and the queries made (by kind). */
function countingStore(inner: MemoryStore): { store: Store; reads: Map<string, number>; queries: Map<string, number> } {
  const reads = new Map<string, number>();
  const queries = new Map<string, number>();
  const read = (keys: readonly Key[]): void => {
    for (const k of keys) if (k.kind.startsWith('LockerFanOut')) reads.set(k.kind, (reads.get(k.kind) ?? 0) + 1);
  };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (prop === 'get') return (key: Key) => { read([key]); return fn.call(target, key); };
      if (prop === 'readMany') return (keys: readonly Key[]): Promise<VersionedRead[]> => { read(keys); return fn.call(target, keys) as Promise<VersionedRead[]>; };
      if (prop === 'findKeys') return (q: KeyQuery) => { queries.set(q.kind, (queries.get(q.kind) ?? 0) + 1); return fn.call(target, q); };
      if (prop === 'transaction') {
        return <T>(body: (tx: StoreTransaction) => Promise<T>) => target.transaction((tx) => body({
          get: (k) => { read([k]); return tx.get(k); },
          put: (k, p, e) => tx.put(k, p, e),
          delete: (k) => tx.delete(k),
          getLedger: (k, id) => tx.getLedger(k, id),
          putLedger: (r) => tx.putLedger(r),
          deleteLedger: (k, id) => tx.deleteLedger(k, id),
        }));
      }
      return fn.bind(target);
    },
  });
  return { store, reads, queries };
}

describe('the completion check of a fan-out of 1,000 children on the in-memory store', () => {
  let rig: FanRig;
  let counted: ReturnType<typeof countingStore>;
  before(async () => {
    counted = countingStore(new MemoryStore());
    rig = await fanRig(counted.store, undefined);
  });
  after(() => rig.close());

  it('reads a bounded number of records per child and queries no child', async (t) => {
    const parent = rig.key('Order', 'reads');
    const children = Array.from({ length: CHILDREN }, (_, i) => ({ name: `reads-${i}`, mode: 'ok' as const }));
    await rig.start(parent, children);
    const run = await rig.joined(parent, 600_000);
    await rig.settle();
    assert.equal(rig.joins.filter((j) => j.parent === keyPath(parent)).length, 1, 'the join ran once');
    assert.equal(run.counts.succeeded, CHILDREN, 'the join saw every child succeed');
    assert.equal(counted.queries.get('LockerFanOutChild') ?? 0, 0, 'no query on the child records');
    const total = [...counted.reads.values()].reduce((a, b) => a + b, 0);
    t.diagnostic(`fan-out records read: ${total} for ${CHILDREN} children (${JSON.stringify(Object.fromEntries(counted.reads))})`);
    assert.ok(total <= READS_PER_CHILD * CHILDREN, `fan-out records read: ${total} (${JSON.stringify(Object.fromEntries(counted.reads))}), at most ${READS_PER_CHILD} per child`);
  });
});

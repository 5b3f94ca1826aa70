// `ctx.fanOut()` writes up to PAGE_WINDOW pages at once, and page n only once page n - PAGE_WINDOW
// is written; readers that do not know the page count yet (the seal after a retried attempt, a
// cancel while writing) read pages in windows of PAGE_WINDOW until one has none written, so they
// find every page written past fewer than PAGE_WINDOW absent ones
// (`pagesFrom()`). A store wrapper on the in-memory store times each page's child records and
// its page record while 2,000 children (twenty pages) are added.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { MemoryStore } from '../../src/store/memory/store';
import { keyPath } from '../../src/keys/key-codec';
import { pagesFrom, type ReadParts } from '../../src/fanout/read-children';
import { PAGE_WINDOW, pageKey } from '../../src/fanout/records';
import type { Properties, Store, StoreTransaction } from '../../src/types';
import { fanRig, type FanRig } from '../support/fan-rig';

const CHILDREN = 2_000;

/** When each page's first child record transaction began, and when its page record committed (ms, from performance.now()). */
interface PageTimes { recordsBegan: Map<number, number>; listed: Map<number, number>; inFlight: number; mostInFlight: number }

/** The in-memory store, timing the fan-out's page work; each page record's commit is delayed 20 ms so pages overlap. */
function timingStore(inner: MemoryStore): { store: Store; times: PageTimes } {
  const times: PageTimes = { recordsBegan: new Map(), listed: new Map(), inFlight: 0, mostInFlight: 0 };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (prop !== 'transaction' || typeof value !== 'function') return value;
      return async <T>(body: (tx: StoreTransaction) => Promise<T>): Promise<T> => {
        const pages: number[] = [];
        const result = await target.transaction(async (tx) => {
          pages.length = 0;
          const out = await body({
            get: (k) => tx.get(k),
            put: (k: Key, p: Properties, e) => {
              if (k.kind === 'LockerFanOutChild' && p.state === 'pending' && !times.recordsBegan.has(Number(p.page))) {
                times.recordsBegan.set(Number(p.page), performance.now());
                times.mostInFlight = Math.max(times.mostInFlight, ++times.inFlight);
              }
              if (k.kind === 'LockerFanOutPage') pages.push(Number(/-p(\d+)$/.exec(k.name!)![1]));
              tx.put(k, p, e);
            },
            delete: (k) => tx.delete(k),
            getLedger: (k, id) => tx.getLedger(k, id),
            putLedger: (r) => tx.putLedger(r),
            deleteLedger: (k, id) => tx.deleteLedger(k, id),
          });
          if (pages.length > 0) await new Promise((resolve) => setTimeout(resolve, 20));
          return out;
        });
        for (const n of pages) {
          if (!times.listed.has(n)) times.inFlight--;
          times.listed.set(n, performance.now());
        }
        return result;
      };
    },
  });
  return { store, times };
}

describe('fanOut() pages', () => {
  let rig: FanRig;
  let times: PageTimes;
  before(async () => {
    const timed = timingStore(new MemoryStore());
    times = timed.times;
    rig = await fanRig(timed.store, undefined);
  });
  after(async () => {
    await rig.close();
  });

  it(`are written up to ${PAGE_WINDOW} at once, page n only once page n - ${PAGE_WINDOW} is listed`, async () => {
    const parent = rig.key('Order', 'paged');
    const children = Array.from({ length: CHILDREN }, (_, i) => ({ name: `pg-${i}`, mode: 'ok' as const }));
    await rig.start(parent, children);
    const run = await rig.joined(parent);
    assert.equal(run.counts.succeeded, CHILDREN, `the join of ${keyPath(parent)} saw every child succeed`);
    const pages = CHILDREN / 100;
    assert.equal(times.listed.size, pages, 'every page was listed');
    for (let n = PAGE_WINDOW; n < pages; n++) {
      assert.ok(times.recordsBegan.get(n)! >= times.listed.get(n - PAGE_WINDOW)!, `page ${n} began after page ${n - PAGE_WINDOW} was listed`);
    }
    assert.ok(times.mostInFlight > 1, `pages overlapped (at most ${times.mostInFlight} at once)`);
    assert.ok(times.mostInFlight <= PAGE_WINDOW, `at most ${PAGE_WINDOW} pages at once (${times.mostInFlight})`);
  });
});

describe('pagesFrom()', () => {
  const store = new MemoryStore();
  const parts: ReadParts = { reads: { get: (k: Key) => store.get(k), getMany: (keys: readonly Key[]) => Promise.all(keys.map((k) => store.get(k))) } as ReadParts['reads'] };
  const write = async (fanout: string, pages: readonly number[]): Promise<void> => {
    await store.transaction(async (tx) => {
      for (const n of pages) tx.put(pageKey(fanout, n, undefined), { fanout, ids: [`${fanout}-child-${n}`] }, []);
    });
  };

  it(`finds pages past fewer than ${PAGE_WINDOW} absent ones in a row, and stops at a window of ${PAGE_WINDOW} with none written`, async () => {
    await write('f-none', []);
    assert.equal(await pagesFrom(parts, 'f-none', undefined, 0), 0, 'no page written');
    await write('f-run', [0, 1, 2]);
    assert.equal(await pagesFrom(parts, 'f-run', undefined, 0), 3, 'pages 0-2');
    assert.equal(await pagesFrom(parts, 'f-run', undefined, 3), 3, 'none past 3');
    const widest = Array.from({ length: PAGE_WINDOW - 1 }, (_, i) => 2 + i); // pages 2 .. PAGE_WINDOW absent
    await write('f-gap', [0, 1, 2 + widest.length, 2 + widest.length + 1]);
    assert.equal(await pagesFrom(parts, 'f-gap', undefined, 0), 2 + widest.length + 2, `pages past ${widest.length} absent ones are found`);
    await write('f-gaps', [0, 2, 4, 6 + PAGE_WINDOW - 2]);
    assert.equal(await pagesFrom(parts, 'f-gaps', undefined, 1), 6 + PAGE_WINDOW - 1, 'gaps one after another are crossed');
    await write('f-far', [0, 2 * PAGE_WINDOW]);
    assert.equal(await pagesFrom(parts, 'f-far', undefined, 0), 1, `a page past a whole window of ${PAGE_WINDOW} absent ones (past any crash's gap) is not looked for`);
  });
});

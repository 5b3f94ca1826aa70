// The in-memory store's lock index (src/store/memory/lock-index.ts) answers as a scan would:
// after random writes (a state, a lock_ts with ties, a run set, changed or removed, entities
// deleted, lock fields dropped), every list (both orders, ranges, a run, paged by cursors) and
// every count match what a plain filter over the store's entities finds, in Datastore's order
// (lock_ts, then key). Seeded, so a failure replays.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Key } from '@google-cloud/datastore';
import { MemoryStore } from '../../src/store/memory/store';
import { keyString } from '../../src/keys/keys';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import type { LockQuery } from '../../src/store/lock-query';
import { StepState, type Properties } from '../../src/types';

const KINDS = ['A', 'B'];
const NAMESPACES = ['', 'ns'];
const STATES = [StepState.scheduled, StepState.failed, StepState.complete, StepState.cancelled];
const RUNS = [undefined, 'r1', 'r2'];
const T0 = Date.parse('2031-01-01T00:00:00.000Z');

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('MemoryStore: lists and counts from its lock index', () => {
  for (const seed of [1, 2, 3]) {
    it(`answers as a scan of every entity would (seed ${seed})`, async () => {
      const rnd = random(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
      const store = new MemoryStore();
      const truth = new Map<string, { key: Key; props: Properties }>();
      const keys = Array.from({ length: 60 }, (_, i) => new Key({ namespace: pick(NAMESPACES) || undefined, path: [pick(KINDS), `e${i}`] }));
      for (let round = 0; round < 40; round++) {
        await store.transaction(async (tx) => {
          for (let n = 0; n < 8; n++) {
            const key = pick(keys);
            const roll = rnd();
            if (roll < 0.1) {
              tx.delete(key);
              truth.delete(keyString(key));
              continue;
            }
            const run = pick(RUNS);
            const props: Properties = roll < 0.15
              ? { total: n } // not a lock: never listed
              : { lock_ts: new Date(T0 + Math.floor(rnd() * 10) * 1_000), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: pick(STATES), ...(run ? { lock_run: run } : {}) };
            tx.put(key, props, UNINDEXED_LOCK_FIELDS);
            truth.set(keyString(key), { key, props });
          }
        });
        for (let q = 0; q < 6; q++) {
          const from = rnd() < 0.5 ? new Date(T0 + Math.floor(rnd() * 10) * 1_000) : undefined;
          const before = rnd() < 0.5 ? new Date(T0 + Math.floor(rnd() * 11) * 1_000) : undefined;
          const run = pick(RUNS);
          const query: Omit<LockQuery, 'limit' | 'order'> = {
            kind: pick(KINDS), namespace: pick(NAMESPACES), state: pick(STATES),
            ...(from ? { tsFrom: from } : {}), ...(before ? { tsBefore: before } : {}), ...(run ? { run } : {}),
          };
          const expected = [...truth.values()].filter(({ key, props }) =>
            key.kind === query.kind && (key.namespace ?? '') === query.namespace && props.lock_state === query.state &&
            props.lock_ts instanceof Date && (!from || props.lock_ts >= from) && (!before || props.lock_ts < before) &&
            (!run || props.lock_run === run),
          ).sort((a, b) => (a.props.lock_ts as Date).getTime() - (b.props.lock_ts as Date).getTime() || (keyString(a.key) < keyString(b.key) ? -1 : 1))
            .map(({ key }) => String(key.name));
          const context = `seed ${seed}, round ${round}, ${JSON.stringify(query)}`;
          for (const order of ['asc', 'desc'] as const) {
            const names: string[] = [];
            let cursor: string | undefined;
            do {
              const page = await store.queryLocks({ ...query, order, limit: 3, ...(cursor ? { cursor } : {}) });
              names.push(...page.entities.map((e) => String(e.key.name)));
              cursor = page.cursor;
            } while (cursor);
            assert.deepEqual(names, order === 'asc' ? expected : [...expected].reverse(), `${context}, ${order}`);
          }
          assert.deepEqual(await store.countLocks({ ...query, cap: 100 }), { count: expected.length, exact: true }, context);
          if (expected.length > 1) assert.deepEqual(await store.countLocks({ ...query, cap: expected.length - 1 }), { count: expected.length - 1, exact: false }, context);
        }
      }
    });
  }
});

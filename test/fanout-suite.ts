/**
 * Fan-out and fan-in (`ctx.fanOut()`, docs/guides/fan-out.md) against a real store: run by
 * fanout.*.test.ts on the in-memory store and on both Datastore emulators. Chains run through the
 * local dispatcher (real HTTP) with the sweep on a timer (`support/fan-rig.ts`); faults are
 * injected at the store's seam and in the queue. In every case the join runs once, after every
 * child settled, and sees every child's outcome.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { fanRig, type ChildMode, type FanRig, type JoinRun } from './support/fan-rig';
import { keyPath } from '../src/store/key-codec';
import { StepState } from '../src/types';
import type { StoreUnderTest } from './handle-suite';

let counter = 0;

/** `n` children named after `prefix`, with `mode` (or a mode per index). */
function lines(prefix: string, n: number, mode: ChildMode | ((i: number) => ChildMode) = 'ok'): Array<{ name: string; mode: ChildMode }> {
  return Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${i}`, mode: typeof mode === 'function' ? mode(i) : mode }));
}

/** The join ran once, after every child ended, and saw every child with the state its mode gives. */
async function assertJoinedOnce(rig: FanRig, parent: Key, expected: Array<{ name: string; mode: ChildMode }>): Promise<JoinRun> {
  const run = await rig.joined(parent);
  await rig.settle();
  assert.equal(rig.joins.filter((j) => j.parent === keyPath(parent)).length, 1, 'the join ran once');
  assert.ok(run.allEnded, 'every child chain had ended when the join ran');
  assert.equal(run.children.length, expected.length, 'the join saw every child');
  const byName = new Map(run.children.map((c) => [c.key.name!, c]));
  for (const e of expected) {
    const seen = byName.get(rig.key('Line', e.name).name!);
    assert.ok(seen, `the join saw ${e.name}`);
    const state = e.mode === 'fail' ? 'failed' : e.mode === 'hang' ? 'timedOut' : 'succeeded';
    assert.equal(seen.state, state, `${e.name}'s state`);
    if (state === 'failed') assert.match(seen.error ?? '', /fails for good|busy/);
    if (e.mode === 'ok' || e.mode === 'flaky') assert.deepEqual(seen.result, { name: e.name, seq: 1 });
    if (e.mode === 'two') assert.deepEqual(seen.result, { name: e.name, seq: 2 });
  }
  assert.equal(run.counts.total, expected.length);
  assert.equal(run.counts.pending, 0, 'nothing pending at the join');
  const parentLock = await rig.store.get(parent);
  assert.equal(parentLock?.lock_state, StepState.complete, 'the parent chain completed with its join');
  assert.equal(parentLock?.lock_seq, 3, 'step 1 fanned out, step 2 was the join');
  return run;
}

/** Every child step ran once (a child whose first attempt failed ran twice: `flaky`). */
function assertChildrenRanOnce(rig: FanRig, expected: Array<{ name: string; mode: ChildMode }>): void {
  for (const e of expected) {
    const step = `${keyPath(rig.key('Line', e.name))}#1`;
    const runs = rig.childRuns.get(step) ?? 0;
    assert.equal(runs, e.mode === 'flaky' ? 2 : 1, `${step} ran ${runs} times`);
  }
}

export function fanOutSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`ctx.fanOut() on ${name}`, () => {
    let s: StoreUnderTest;
    let rig: FanRig;
    before(async () => {
      s = await open();
      rig = await fanRig(s.store, s.namespace);
    });
    after(async () => {
      await rig.close();
      await s.close?.();
    });
    const parentKey = (): Key => rig.key('Order', `o${++counter}`);

    it('runs every child, then the join once with every outcome and result, read in pages (250 children)', async () => {
      const parent = parentKey();
      const children = lines(`p${counter}`, 250);
      await rig.start(parent, children);
      const run = await assertJoinedOnce(rig, parent, children);
      assert.equal(run.outcome, 'succeeded');
      assertChildrenRanOnce(rig, children);
    });
  });
}

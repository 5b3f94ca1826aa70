/**
 * Kickoffs and fan-outs as rows of their own (`locker.inspect().kickoffs()`, `kickoff()`,
 * `fanOuts()`, `list({ run })`, a step's `fanOuts` and `parent`) against a real store: run by
 * runs.*.test.ts on the in-memory store and on both Datastore emulators. Chains run through the
 * local dispatcher (real HTTP); a fan-out through the fan-out rig.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { PermanentError } from '../../src/errors/errors';
import { keyPath } from '../../src/keys/key-codec';
import { kickoffRun, fanOutRun } from '../../src/rules/kickoff-plan';
import { fanOutId } from '../../src/fanout/records';
import { InspectState } from '../../src/ops/inspect/step-view';
import type { KickoffRow } from '../../src/ops/inspect/runs';
import type { Properties, Store } from '../../src/types';
import { keys, MemoryLogger } from '../support/task-app';
import { fanRig } from '../support/fan-rig';
import type { StoreUnderTest } from '../step/handle-suite';

let counter = 0;

/** Polls `read` until `done` holds of its answer; fails after `limitMs` with the last answer. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, limitMs = 60_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`not reached after ${limitMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A Locker whose `/job` chains run two steps, or fail for good on their first when the payload says `fail`. */
export async function jobRig(store: Store): Promise<{ locker: Locker; local: LocalQueue; close(): Promise<void> }> {
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const logger = new MemoryLogger();
  const local = new LocalQueue({ baseUrl: `http://127.0.0.1:${port}`, logger, minBackoffMs: 20, maxBackoffMs: 200 });
  const locker = new Locker({ store, queue: local, logger, maxRetries: 2 });
  app.post('/job', locker.handle<Properties, { fail?: boolean }>(async (ctx) => {
    if (ctx.payload?.fail) throw new PermanentError('this job fails for good');
    if (ctx.seq < 2) await ctx.schedule('/job', {});
  }, (p) => p));
  return {
    locker, local,
    async close() {
      await locker.shutdown();
      await local.shutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * `chains`: how many chains the kickoff case starts (300 by default; a tenth of them fail by
 * design). runs.datastore.test.ts runs 100 in `npm test` and 300 in `npm run test:long`: on the
 * emulators the 300-chain case was most of the file's 78 s of CPU (2026-11-29).
 */
export function runsSuite(name: string, open: () => Promise<StoreUnderTest>, chains = 300): void {
  const failing = chains / 10;
  if (!Number.isInteger(failing) || chains > 1_000) throw new RangeError(`runsSuite: chains must be a multiple of 10 up to 1,000; got ${chains}`);
  describe(`kickoffs and fan-outs as rows on ${name}`, { concurrency: 1 }, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    it(`a ${chains}-chain kickoff: one record with its total and kind, progress moving to complete ${chains - failing} and failed ${failing}, its chains listed by state, one record after a re-run`, { timeout: 180_000 }, async () => {
      counter++;
      const rig = await jobRig(s.store);
      try {
        const kickoffId = `runs-${counter}-${Date.now()}`;
        const items = Array.from({ length: chains }, (_, i) => ({
          key: keys.key({ namespace: s.namespace, path: ['Job', `k${counter}-${i}`] }), entity: { i }, path: '/job', payload: { fail: i % 10 === 4 },
        }));
        const result = await rig.locker.scheduleMany(items, { kickoffId });
        assert.equal(result.started, chains);
        const inspector = rig.locker.inspect();
        const first = await inspector.kickoffRow(kickoffId);
        assert.ok(first, 'the kickoff left a record');
        assert.equal(first.run, kickoffRun(kickoffId));
        assert.equal(first.progress.total, chains);
        assert.deepEqual(first.kinds, [{ kind: 'Job', namespace: s.namespace ?? '', items: chains }]);
        assert.equal(first.state, 'finished');
        assert.deepEqual(first.settled, { started: chains, busy: 0, failed: 0 });
        assert.equal(first.calls, 1);
        // The four counts are read side by side, not as one snapshot: a chain that completes while
        // they are read can show as pending and complete in one row (CI at b62d831: 2 of 100 did).
        // So the row is awaited until it shows every chain settled and none pending.
        const done = await eventually(() => inspector.kickoffRow(kickoffId), (r) => r?.progress.complete.count === chains - failing && r.progress.failed.count === failing && r.progress.pending.count === 0);
        assert.equal(done!.progress.cancelled.count, 0);
        assert.equal(done!.progress.started, chains, 'every chain of the kickoff carries its lock_run');
        assert.ok(done!.progress.complete.exact && done!.progress.failed.exact);
        assert.equal(done!.oldestPending, undefined, 'nothing pending');

        const failed = await inspector.list({ kind: 'Job', namespace: s.namespace ?? '', state: InspectState.failed, run: first.run, limit: 100 });
        assert.equal(failed.steps.length, failing, 'the kickoff\'s failed chains, listed by its run');
        for (const step of failed.steps) {
          assert.equal(step.run, first.run);
          assert.equal(Number((step.properties as { i: number }).i) % 10, 4);
        }
        const other = await inspector.list({ kind: 'Job', namespace: s.namespace ?? '', state: InspectState.failed, run: kickoffRun(`${kickoffId}-other`), limit: 100 });
        assert.equal(other.steps.length, 0, 'another run lists none of them');

        const again = await rig.locker.scheduleMany(items, { kickoffId });
        assert.equal(again.results.filter((r) => r.status === 'started' && r.resumed).length, chains, 'the re-run recognised every chain');
        const after = await inspector.kickoffRow(kickoffId);
        assert.equal(after!.calls, 2, 'the re-run updated the same record');
        assert.equal(after!.startedAt.getTime(), first.startedAt.getTime(), 'which keeps when the kickoff first began');
        const listed: KickoffRow[] = [];
        let cursor: string | undefined;
        do {
          const page = await inspector.kickoffs({ limit: 2, ...(cursor !== undefined && { cursor }) });
          listed.push(...page.rows);
          cursor = page.cursor;
        } while (cursor !== undefined && listed.length < 100);
        assert.equal(listed.filter((r) => r.kickoffId === kickoffId).length, 1, 'one row for the kickoff, paging included');
        for (let i = 1; i < listed.length; i++) assert.ok(listed[i - 1]!.startedAt >= listed[i]!.startedAt, 'newest first');
      } finally {
        await rig.close();
      }
    });

    it('a fan-out keeps its row after the join, counted by its children\'s lock_run; a child names its parent; its children list by state', { timeout: 120_000 }, async () => {
      const rig = await fanRig(s.store, s.namespace);
      try {
        const parent = rig.key('Order', 'rows');
        const children = ['a', 'b', 'c', 'd', 'e', 'f'].map((n, i) => ({ name: `rows-${n}`, mode: i < 2 ? 'fail' as const : 'ok' as const }));
        await rig.start(parent, children);
        await rig.joined(parent);
        await rig.settle();
        const inspector = rig.locker.inspect();
        const detail = await inspector.step(parent);
        assert.ok(detail && detail.chain, 'the parent exists');
        const id = fanOutId(parent, detail.chain, 1);
        const row = await eventually(() => inspector.fanOut(id, s.namespace ?? ''), (r) => r?.progress.complete.count === 4 && r.progress.failed.count === 2 && r.progress.pending.count === 0);
        assert.equal(row!.state, 'joining');
        assert.equal(row!.run, fanOutRun(id));
        assert.deepEqual(row!.kinds, ['Line']);
        assert.equal(row!.progress.total, 6);
        assert.deepEqual(row!.atJoin && [row!.atJoin.total, row!.atJoin.succeeded, row!.atJoin.failed], [6, 4, 2], 'the counts the join was decided on');
        assert.equal(keyPath(row!.parent.key), keyPath(parent));

        assert.equal(detail.state, InspectState.complete, 'the parent\'s chain went past its join');
        assert.deepEqual(detail.fanOuts.map((f) => f.id), [id], 'and its detail still shows the fan-out');
        const listed = await eventually(() => inspector.fanOuts({ namespace: s.namespace ?? '', limit: 50 }), (p) => p.rows.some((r) => r.id === id));
        assert.equal(listed.rows.filter((r) => r.id === id).length, 1);

        const failed = await inspector.list({ kind: 'Line', namespace: s.namespace ?? '', state: InspectState.failed, run: row!.run });
        assert.deepEqual(failed.steps.map((c) => keyPath(c.key)).sort(), [rig.key('Line', 'rows-a'), rig.key('Line', 'rows-b')].map(keyPath).sort());
        const complete = await inspector.list({ kind: 'Line', namespace: s.namespace ?? '', state: InspectState.complete, run: row!.run });
        assert.equal(complete.steps.length, 4);
        const child = await inspector.step(failed.steps[0]!.key as Key);
        assert.equal(child!.parent?.fanOut, id, 'a child names its fan-out');
        assert.equal(child!.parent?.keyPath, keyPath(parent), 'and its parent');
      } finally {
        await rig.close();
      }
    });
  });
}

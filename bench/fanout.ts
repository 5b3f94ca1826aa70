/**
 * Fan-out and fan-in (issue 28) on the legacy emulator, in one run, with the tasks delivered for
 * real (the local dispatcher, HTTP on loopback):
 *
 * - children started per second by one `ctx.fanOut()` of N children, against one
 *   `locker.scheduleMany()` of N new one-step chains (the ratio; the target is ≥ 0.5×);
 * - the time from the last child settling (its chain's `completed` event) to the join's handler
 *   starting;
 * - RPCs per child over its whole life (started, run, settled, and its share of the seal, the
 *   completion check and the join's reads), beyond what a plain one-step chain started by
 *   `scheduleMany()` costs, counted on the store's generated client;
 * - the most writes any one entity received in any one second while the fan-out ran, counted by a
 *   store wrapper (`counting-store.ts`), and the writes of the parent and of the fan-out's header.
 */
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Datastore, Key } from '@google-cloud/datastore';
import { DatastoreStore, LocalQueue, Locker } from './library';
import { spyClient } from '../test/support/datastore-spy';
import { CountingStore, type HottestEntity } from './counting-store';
import type { KeySource } from './entities';

/** The target: children started per second by `fanOut()` against `scheduleMany()`. */
export const FAN_OUT_TARGET = 0.5;

/** How often the benchmark's Locker sweeps, ms. */
const SWEEP_MS = 1_000;

/** What the fan-out part measured. */
export interface FanOutReport {
  children: number;
  /** Children started per second by `ctx.fanOut()` (the call, from entry to return). */
  fanOutPerSec: number;
  /** Chains started per second by `scheduleMany()` of as many new entities. */
  bulkPerSec: number;
  /** From the last child's `completed` event to the join's handler starting, ms. */
  settleToJoinMs: number;
  /** RPCs per plain one-step chain, kicked off by `scheduleMany()` and run. */
  plainRpcsPerChain: number;
  /** RPCs per child over the whole fan-out (parent and join included), divided by the children. */
  fanOutRpcsPerChild: number;
  /** The most writes any one entity received in any one second while the fan-out ran. */
  hottest: HottestEntity;
  /**
   * The same among the entities the children share (the parent, the header, the pages and their
   * done marks), in the seconds from the first child settling to the last.
   */
  hottestShared: HottestEntity;
  /** Writes of the parent entity, and the most of any fan-out header, over the fan-out. */
  parentWrites: number;
  headerWrites: number;
  /**
   * Each write of the parent, in order: ms from the first child settling (negative before it) and
   * the lock it wrote (`seq/state/held|free`), so a second write in one second says which two.
   */
  parentTimeline: string[];
  /** From the first child settling to the last, ms (the window `hottestShared` looks at). */
  settleSpanMs: number;
  /** The join saw every child succeeded. */
  joinSawAll: boolean;
}

/** The kinds of the entities a fan-out's children share (a child's own entity and record are its own). */
const SHARED_KINDS = ['BenchParent', 'LockerFanOut', 'LockerFanOutPage', 'LockerFanOutDone'];

/** `hot` with its entity's name without the namespace part. */
function named(hot: HottestEntity): HottestEntity {
  return { ...hot, entity: hot.entity.replace(/^[^\u0000]*\u0000/, '') };
}

/** Runs the plain chains, then the fan-out, with `children` entities each. */
export async function measureFanOut(datastore: Datastore, keys: KeySource, children: number): Promise<FanOutReport> {
  const spy = spyClient(datastore, { keepRequests: false });
  const store = new CountingStore(new DatastoreStore(datastore, { client: spy.client }), ['BenchParent']);
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const queue = new LocalQueue({ baseUrl: `http://127.0.0.1:${port}`, concurrency: 16 });
  const locker = new Locker({ store, queue, logger: { info() {}, warn() {}, error() {} } });
  // As deployed: the sweep repairs a completion check that a stale query missed (legacy Datastore).
  locker.startSweeping(SWEEP_MS);
  const ns = keys.namespace;
  const key = (kind: string, name: string): Key => datastore.key({ namespace: ns, path: [kind, name] });

  let completed = 0;
  let lastChildSettled = 0;
  /** Wall-clock ms (`Date.now()`, as the counting store's seconds) of the first and last child settling. */
  const settling = { from: 0, to: 0 };
  let joinStarted = 0;
  let fanOutMs = 0;
  let joinSawAll = false;
  let joined: () => void = () => {};
  let allPlainDone: () => void = () => {};
  locker.on('completed', (e) => {
    if (e.next !== undefined) return;
    if (e.key.kind === 'BenchPlain' && ++completed === children) allPlainDone();
    if (e.key.kind === 'BenchChild') {
      lastChildSettled = performance.now();
      if (settling.from === 0) settling.from = Date.now();
      settling.to = Date.now();
    }
    if (e.key.kind === 'BenchParent') joined();
  });
  app.post('/plain', locker.handle(() => {}, (p) => p));
  app.post('/child', locker.handle(() => {}, (p) => p));
  app.post('/parent', locker.handle(async (ctx) => {
    const start = performance.now();
    const started = await ctx.fanOut(Array.from({ length: children }, (_, i) => ({ key: key('BenchChild', `c-${i}`), path: '/child', entity: { n: i } })), { join: '/join' });
    fanOutMs = performance.now() - start;
    if (started.started !== children) throw new Error(`fanOut started ${started.started} of ${children} children`);
  }, (p) => p));
  app.post('/join', locker.handle(async (ctx) => {
    joinStarted = performance.now();
    const fanIn = await ctx.fanIn();
    joinSawAll = fanIn?.counts.succeeded === children && fanIn.counts.total === children;
  }, (p) => p));

  try {
    // Untimed: the store's backend check, and a first pass for the JIT and the emulator.
    const warm = Math.min(children, 200);
    const warmDone = new Promise<void>((resolve) => { allPlainDone = resolve; });
    completed = children - warm; // the completed listener resolves at `children`
    await locker.scheduleMany(Array.from({ length: warm }, (_, i) => ({ key: key('BenchPlain', `w-${i}`), entity: { n: i }, path: '/plain' })));
    await warmDone;
    await queue.idle();
    completed = 0;

    // Plain one-step chains: scheduleMany() timed, then run to completion with their RPCs counted.
    const plainDone = new Promise<void>((resolve) => { allPlainDone = resolve; });
    let calls = spy.calls.length;
    const bulkStart = performance.now();
    const result = await locker.scheduleMany(Array.from({ length: children }, (_, i) => ({ key: key('BenchPlain', `p-${i}`), entity: { n: i }, path: '/plain' })));
    const bulkMs = performance.now() - bulkStart;
    if (result.started !== children) throw new Error(`scheduleMany started ${result.started} of ${children} chains`);
    await plainDone;
    await queue.idle();
    const plainRpcsPerChain = (spy.calls.length - calls) / children;

    // The fan-out: one parent, its children, its join; RPCs and writes counted over all of it.
    store.reset();
    calls = spy.calls.length;
    const done = new Promise<void>((resolve) => { joined = resolve; });
    await locker.schedule(key('BenchParent', 'parent'), { n: 0 }, '/parent');
    await done;
    await queue.idle();
    const fanOutRpcsPerChild = (spy.calls.length - calls) / children;
    return {
      children,
      fanOutPerSec: children / (fanOutMs / 1000),
      bulkPerSec: children / (bulkMs / 1000),
      settleToJoinMs: joinStarted - lastChildSettled,
      plainRpcsPerChain,
      fanOutRpcsPerChild,
      hottest: named(store.hottest()),
      hottestShared: named(store.hottest(SHARED_KINDS, settling)),
      parentWrites: store.mostWritesOfKind('BenchParent'),
      headerWrites: store.mostWritesOfKind('LockerFanOut'),
      parentTimeline: store.watched.map((w) => `${w.at - settling.from} ms ${w.lock}`),
      settleSpanMs: settling.to - settling.from,
      joinSawAll,
    };
  } finally {
    await locker.shutdown();
    await queue.shutdown();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await store.shutdown();
    await spy.close();
  }
}

/** The table's lines for the fan-out part. */
export function fanOutLines(r: FanOutReport): string[] {
  const ratio = r.fanOutPerSec / r.bulkPerSec;
  return [
    `Fan-out of ${r.children} children (one-step chains, delivered by the local dispatcher on loopback)`,
    `  children started/s by ctx.fanOut()          ${r.fanOutPerSec.toFixed(0).padStart(8)}   ${ratio.toFixed(2)} × scheduleMany() (${r.bulkPerSec.toFixed(0)}/s)   target ≥ ${FAN_OUT_TARGET} ${ratio >= FAN_OUT_TARGET ? 'met' : 'MISSED'}`,
    `  last child settled -> join started          ${r.settleToJoinMs.toFixed(0).padStart(8)} ms`,
    `  RPCs per child over its life                ${r.fanOutRpcsPerChild.toFixed(2).padStart(8)}   plain one-step chain ${r.plainRpcsPerChain.toFixed(2)}, beyond it ${(r.fanOutRpcsPerChild - r.plainRpcsPerChain).toFixed(2)}`,
    `  most writes to one entity in one second     ${String(r.hottest.writes).padStart(8)}   (${r.hottest.entity}); parent written ${r.parentWrites}×, header ${r.headerWrites}× in all`,
    `    the parent, header, pages, done marks      ${String(r.hottestShared.writes).padStart(8)}   (${r.hottestShared.entity || 'none written'}), while children settle: target ≤ 1 ${r.hottestShared.writes <= 1 ? 'met' : 'MISSED'}`,
    `    the parent's writes, ms from the first child settling (the last settled at ${r.settleSpanMs} ms): ${r.parentTimeline.join(', ')}`,
    `  the join saw every child succeeded: ${r.joinSawAll ? 'yes' : 'NO'}`,
  ];
}

/** The JSON fields of the fan-out part. */
export function fanOutJson(r: FanOutReport): Record<string, unknown> {
  const ratio = r.fanOutPerSec / r.bulkPerSec;
  return {
    fanOutChildren: r.children,
    fanOutChildrenPerSec: Math.round(r.fanOutPerSec),
    fanOutBulkPerSec: Math.round(r.bulkPerSec),
    fanOutToBulk: Math.round(ratio * 100) / 100,
    fanOutSettleToJoinMs: Math.round(r.settleToJoinMs),
    fanOutPlainRpcsPerChain: Math.round(r.plainRpcsPerChain * 100) / 100,
    fanOutRpcsPerChild: Math.round(r.fanOutRpcsPerChild * 100) / 100,
    fanOutExtraRpcsPerChild: Math.round((r.fanOutRpcsPerChild - r.plainRpcsPerChain) * 100) / 100,
    fanOutMaxWritesPerEntitySecond: r.hottest.writes,
    fanOutHottestEntity: r.hottest.entity,
    fanOutMaxWritesPerSharedEntitySecond: r.hottestShared.writes,
    fanOutHottestSharedEntity: r.hottestShared.entity,
    fanOutParentWrites: r.parentWrites,
    fanOutHeaderWrites: r.headerWrites,
    fanOutJoinSawAll: r.joinSawAll,
    fanOutTargetMet: ratio >= FAN_OUT_TARGET,
  };
}

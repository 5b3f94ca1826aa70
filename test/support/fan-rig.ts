/**
 * A real app for fan-out tests: Express on loopback, a Locker on a store behind the seam wrapper
 * (`seam-store.ts`), the local dispatcher (real HTTP) behind a queue that may lose tasks, and the
 * sweep on a timer. `/parent` fans out the children its payload lists, `/child` does what each
 * child's mode says, `/join` records what `ctx.fanIn()` shows. Every run is recorded, so a test can
 * check that each child ran once and the join once, after every child settled.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { PermanentError } from '../../src/errors/errors';
import { keyPath } from '../../src/keys/key-codec';
import { StepState, type Json, type Properties, type Store, type TaskRequest } from '../../src/types';
import type { FanInChild, FanOutPolicy } from '../../src/fanout/types';
import type { TaskContext } from '../../src/step/handler-types';
import type { LockerOptions } from '../../src/config/options';
import { lossyQueue, type Loss, type LossyQueue } from './lossy-queue';
import { SeamStore } from './seam-store';
import { keys, MemoryLogger } from './task-app';

/**
 * What a child does: complete with a result, fail for good, stay pending (a step far ahead), run
 * two steps, fan out itself (`nestHang`: to two children that stay pending), fail once then
 * succeed, or fail for good once (then succeed when an operator retries it).
 */
/** `late`: runs as `ok`, but waits for `releaseLate()` before its `setResult()` (a child still running when the deadline passed). */
export type ChildMode = 'ok' | 'fail' | 'hang' | 'two' | 'nest' | 'nestHang' | 'flaky' | 'failOnce' | 'late';

/** One join run that finished (the join step's handler returned). */
export interface JoinRun {
  parent: string;
  seq: number;
  outcome: string;
  counts: Record<string, number>;
  children: FanInChild[];
  /** Whether every child's chain had ended (read from the child entities) when the join ran. */
  allEnded: boolean;
}

export interface FanRig {
  locker: Locker;
  store: SeamStore;
  queue: LossyQueue;
  local: LocalQueue;
  logger: MemoryLogger;
  namespace: string | undefined;
  /** Finished join runs. */
  joins: JoinRun[];
  /** Join attempts, finished or not. */
  joinAttempts: string[];
  /** Runs of each child step, by `keyPath#seq`. */
  childRuns: Map<string, number>;
  /** Runs of each fanning step (`/parent`), by `keyPath#seq`. */
  parentRuns: Map<string, number>;
  /**
   * Leases overwritten (the `overwritten` event, which comes with an overwrite alert), by
   * `keyPath#seq`: a run beyond a step's one is allowed only with one of these (a lease that lapsed
   * on a loaded machine), as the library promises.
   */
  overwrites: Map<string, number>;
  /** Fan-out calls that returned, by parent. */
  fanOuts: string[];
  /** Tasks the local queue got a 2xx answer for, in order. */
  delivered: TaskRequest[];
  key(kind: string, name: string): Key;
  /** Starts a parent whose first step fans out `children` (`name:mode`). */
  /** `gate`: the seal's commit waits for it (children may finish before the seal). */
  /** `failFirstAfter`: the child source throws a `PermanentError` after that many children (the step fails for good), until `stopFailing()`. */
  /** `reverseOnRetry`: once it stopped failing, the source gives the children in the reverse order. */
  start(parent: Key, children: Array<{ name: string; mode: ChildMode }>, options?: { policy?: FanOutPolicy; failJoinOnce?: boolean; gate?: () => Promise<void>; failFirstAfter?: number; reverseOnRetry?: boolean }): Promise<void>;
  /** Makes the parent's child source give all its children from now on (see `failFirstAfter`). */
  stopFailing(parent: Key): void;
  /** Resolves once `n` joins of `parent` finished (bounded: rejects after `limitMs` saying what is missing). */
  joined(parent: Key, limitMs?: number): Promise<JoinRun>;
  /** Waits for the local queue to go idle and two more sweeps. */
  settle(): Promise<void>;
  /** Lets the `late` children go on to their `setResult()`. */
  releaseLate(): void;
  close(): Promise<void>;
}

let rigs = 0;

/**
 * `timing`: the Locker's lease and `stallAfter`; by default 3 s each, so that the sweep's repairs
 * show within a test, and 3 retries. `'defaults'` keeps the Locker's own (a 60 s lease, `stallAfter`
 * 5 minutes, 10 retries), as the fan-out guide advises for a fan-out whose children wait in the
 * queue longer than 3 s.
 */
export async function fanRig(
  inner: Store, namespace: string | undefined, loss?: { kind: Loss; every: number }, timing: 'short' | 'defaults' = 'short', extra: Partial<LockerOptions> = {},
): Promise<FanRig> {
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const logger = new MemoryLogger();
  const delivered: TaskRequest[] = [];
  const local = new LocalQueue({ baseUrl: `http://127.0.0.1:${port}`, logger, minBackoffMs: 20, maxBackoffMs: 200, onDelivered: (task) => { delivered.push(task); } });
  const queue = lossyQueue(local, loss?.kind ?? 'drop', loss?.every ?? Number.MAX_SAFE_INTEGER);
  const store = new SeamStore(inner);
  const locker = new Locker({ store, queue, logger, ...(timing === 'short' && { leaseDuration: 3_000, stallAfter: 3_000, maxRetries: 3 }), ...extra });
  const rig = ++rigs;
  const joins: JoinRun[] = [];
  const joinAttempts: string[] = [];
  const childRuns = new Map<string, number>();
  let releaseLate = (): void => undefined;
  const late = { promise: new Promise<void>((resolve) => { releaseLate = resolve; }), resolve: () => releaseLate() };
  const parentRuns = new Map<string, number>();
  const overwrites = new Map<string, number>();
  locker.on('overwritten', (e) => {
    const step = `${keyPath(e.key)}#${e.seq}`;
    overwrites.set(step, (overwrites.get(step) ?? 0) + 1);
  });
  const fanOuts: string[] = [];
  const failedOnce = new Set<string>();
  const stoppedFailing = new Set<string>();
  const key = (kind: string, name: string): Key => keys.key({ namespace, path: [kind, `r${rig}-${name}`] });

  type Payload = {
    many?: { prefix: string; n: number }; children?: Array<{ name: string; mode: ChildMode }>; policy?: FanOutPolicy; failJoinOnce?: boolean; failFirstAfter?: number;
    reverseOnRetry?: boolean; mode?: ChildMode; name?: string;
  };
  const fan = async (ctx: TaskContext<Properties, Payload>, children: Array<{ name: string; mode: ChildMode }>, policy: FanOutPolicy | undefined, failAfter?: number, reverseOnRetry = false) => {
    const parentName = keyPath(ctx.key);
    const failNow = failAfter !== undefined && !stoppedFailing.has(parentName);
    // Once it stopped failing, the source may give its children in the reverse order (the guide allows another order on a retry).
    const order = reverseOnRetry && stoppedFailing.has(parentName) ? children.slice().reverse() : children;
    async function* source() {
      for (const [i, c] of order.entries()) {
        if (failNow && i === failAfter) {
          throw new PermanentError(`the parent's child source fails for good after ${i} children`);
        }
        yield { key: key('Line', c.name), path: '/child', payload: { mode: c.mode, name: c.name } as Json, entity: { name: c.name } };
      }
    }
    await ctx.fanOut(source(), { join: '/join', payload: { failJoinOnce: ctx.payload?.failJoinOnce ?? false }, ...(policy && { policy }) });
    fanOuts.push(parentName);
  };

  app.post('/parent', locker.handle<Properties, Payload>(async (ctx) => {
    const run = `${keyPath(ctx.key)}#${ctx.seq}`;
    parentRuns.set(run, (parentRuns.get(run) ?? 0) + 1);
    const many = ctx.payload.many;
    const children = many ? Array.from({ length: many.n }, (_, i) => ({ name: `${many.prefix}-${i}`, mode: 'ok' as ChildMode })) : ctx.payload.children ?? [];
    await fan(ctx, children, ctx.payload.policy, ctx.payload.failFirstAfter, ctx.payload.reverseOnRetry);
  }, (p) => p));

  app.post('/child', locker.handle<Properties, Payload>(async (ctx) => {
    const step = `${keyPath(ctx.key)}#${ctx.seq}`;
    childRuns.set(step, (childRuns.get(step) ?? 0) + 1);
    const mode = ctx.payload.mode ?? 'ok';
    if (mode === 'fail') throw new PermanentError(`child ${ctx.payload.name} fails for good`);
    if (mode === 'flaky' && !failedOnce.has(step)) {
      failedOnce.add(step);
      throw new Error('flaky child fails its first attempt');
    }
    if (mode === 'failOnce' && !failedOnce.has(step)) {
      failedOnce.add(step);
      throw new PermanentError(`child ${ctx.payload.name} fails for good, once`);
    }
    if (mode === 'hang') {
      await ctx.schedule('/child', { mode: 'ok', name: ctx.payload.name ?? '' }, { delayMs: 24 * 3600_000 });
      return;
    }
    if (mode === 'two' && ctx.seq === 1) {
      await ctx.schedule('/child', { mode: 'ok', name: ctx.payload.name ?? '' });
      return;
    }
    if (mode === 'nest') {
      await fan(ctx, [1, 2, 3].map((i) => ({ name: `${ctx.payload.name}-g${i}`, mode: 'ok' as ChildMode })), undefined);
      return;
    }
    if (mode === 'late') await late.promise;
    if (mode === 'nestHang') {
      await fan(ctx, [1, 2].map((i) => ({ name: `${ctx.payload.name}-g${i}`, mode: 'hang' as ChildMode })), undefined);
      return;
    }
    await ctx.setResult({ name: ctx.payload.name ?? '', seq: ctx.seq });
  }, (p) => p));

  app.post('/join', locker.handle<Properties, Payload>(async (ctx) => {
    joinAttempts.push(keyPath(ctx.key));
    const fanIn = await ctx.fanIn();
    if (!fanIn) throw new Error(`no fan-in on ${keyPath(ctx.key)} step ${ctx.seq}`);
    const children: FanInChild[] = [];
    let cursor: string | undefined;
    do {
      const page = await fanIn.children(cursor === undefined ? {} : { cursor });
      children.push(...page.children);
      cursor = page.cursor;
    } while (cursor !== undefined);
    const ended = await Promise.all(children.map(async (c) => {
      const lock = (await store.get(c.key))?.lock_state;
      return lock !== StepState.scheduled || c.state === 'timedOut' || c.state === 'failed';
    }));
    const failFirst = ctx.payload?.failJoinOnce && !failedOnce.has(`join:${keyPath(ctx.key)}`);
    if (failFirst) {
      failedOnce.add(`join:${keyPath(ctx.key)}`);
      throw new Error('the join fails its first attempt');
    }
    joins.push({ parent: keyPath(ctx.key), seq: ctx.seq, outcome: fanIn.outcome, counts: { ...fanIn.counts }, children, allEnded: ended.every(Boolean) });
    // A nested fan-out's join ends the child's chain with a result for its own parent's join.
    if (ctx.key.kind === 'Line') await ctx.setResult({ joined: fanIn.counts.total });
  }, (p) => p));

  locker.startSweeping(150);
  return {
    locker, store, queue, local, logger, namespace, joins, joinAttempts, childRuns, parentRuns, overwrites, fanOuts, delivered, key,
    async start(parent, children, options = {}) {
      if (options.gate) store.hold('LockerFanOut:sealed', options.gate);
      // Many plain children travel as a count: a task's payload is at most 96 KiB.
      const many = children.length > 500 && children.every((c, i) => c.mode === 'ok' && c.name.endsWith(`-${i}`))
        ? { many: { prefix: children[0]!.name.slice(0, -2), n: children.length } } : { children };
      await locker.schedule(parent, { order: true }, '/parent', {
        ...many, ...(options.policy && { policy: options.policy as Json }), failJoinOnce: options.failJoinOnce ?? false,
        ...(options.failFirstAfter !== undefined && { failFirstAfter: options.failFirstAfter }),
        ...(options.reverseOnRetry === true && { reverseOnRetry: true }),
      } as unknown as Json);
    },
    stopFailing(parent) {
      stoppedFailing.add(keyPath(parent));
    },
    async joined(parent, limitMs = 120_000) {
      const deadline = Date.now() + limitMs;
      for (;;) {
        const run = joins.find((j) => j.parent === keyPath(parent));
        if (run) return run;
        if (Date.now() > deadline) throw new Error(`no join of ${keyPath(parent)} after ${limitMs} ms; log: ${JSON.stringify(logger.lines.filter((l) => l.level !== 'info').slice(-8))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    releaseLate() {
      late.resolve();
    },
    async settle() {
      // Not local.idle(): a child step scheduled a day ahead (`hang`) keeps the queue from idling.
      const quiet = async (): Promise<void> => {
        while (local.stats().inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      };
      await quiet();
      await locker.sweep();
      await quiet();
      await locker.sweep();
      await quiet();
    },
    async close() {
      await locker.shutdown();
      await local.shutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

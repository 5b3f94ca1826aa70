/**
 * A real app for recovery tests: Express on loopback, a Locker on the given store, the local
 * dispatcher (real HTTP, real signatures) behind a queue wrapper that may lose tasks, and the
 * sweep on a timer, as `startSweeping()` runs it locally. Each chain runs `steps` steps on one
 * route; every handler run is recorded, so a test can check that each step ran once.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import assert from 'node:assert/strict';
import express from 'express';
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../../src/keys/key-codec';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { StepState, type AlertEvent, type Store } from '../../src/types';
import { lossyQueue, type Loss, type LossyQueue } from './lossy-queue';
import { MemoryLogger } from './task-app';

/** Timings of a rig, ms. */
export interface RigTimings { leaseDuration: number; stallAfter: number; sweepIntervalMs: number }

/**
 * Short timings so a lost task is re-delivered within about three seconds, with leases long
 * enough that a loaded machine does not let a running handler's lease go stale.
 */
export const RIG_TIMINGS: RigTimings = Object.freeze({ leaseDuration: 3_000, stallAfter: 3_000, sweepIntervalMs: 150 });

export interface ChainRig {
  locker: Locker;
  queue: LossyQueue;
  logger: MemoryLogger;
  alerts: AlertEvent[];
  /** Every handler run, as `keyPath#seq`. */
  runs: string[];
  /** Resolves when the local dispatcher has no task pending or in flight. */
  idle(): Promise<void>;
  /** Kicks off a chain on `key`. */
  start(key: Key): Promise<void>;
  /** Resolves once every key's chain is complete; rejects after `limitMs` saying which are not. */
  allComplete(keys: Key[], limitMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface RigOptions {
  store: Store;
  steps: number;
  loss?: { kind: Loss; every: number };
  timings?: RigTimings;
}

export async function chainRig(options: RigOptions): Promise<ChainRig> {
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const logger = new MemoryLogger();
  const local = new LocalQueue({ baseUrl: `http://127.0.0.1:${port}`, logger, minBackoffMs: 20, maxBackoffMs: 200 });
  const queue = lossyQueue(local, options.loss?.kind ?? 'drop', options.loss?.every ?? Number.MAX_SAFE_INTEGER);
  const alerts: AlertEvent[] = [];
  const timings = options.timings ?? RIG_TIMINGS;
  const locker = new Locker({
    store: options.store, queue, logger, alerter: (e) => { alerts.push(e); },
    leaseDuration: timings.leaseDuration, stallAfter: timings.stallAfter, maxRetries: 5,
  });
  const runs: string[] = [];
  app.post('/step', locker.handle(async (ctx) => {
    runs.push(`${keyPath(ctx.key)}#${ctx.seq}`);
    if (ctx.seq < options.steps) await ctx.schedule('/step', { after: ctx.seq });
  }, (props) => props));
  locker.startSweeping(timings.sweepIntervalMs);
  return {
    locker, queue, logger, alerts, runs,
    idle: () => local.idle(),
    async start(key) { await locker.schedule(key, { started: true }, '/step'); },
    async allComplete(keys, limitMs = 60_000) {
      const deadline = Date.now() + limitMs;
      for (;;) {
        const states = await Promise.all(keys.map(async (k) => (await options.store.get(k))?.lock_state));
        if (states.every((s) => s === StepState.complete)) return;
        if (Date.now() > deadline) {
          throw new Error(`chains not complete after ${limitMs} ms: ${keys.map((k, i) => `${keyPath(k)}=${String(states[i])}`).join(', ')}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async close() {
      await locker.shutdown();
      await local.shutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Asserts that every step 1..`steps` of every chain ran exactly once, except a step whose lease
 * was taken over (an overwrite alert says so), which may have run twice: the guarantee exactly.
 */
export function assertRanOnce(rig: ChainRig, chains: readonly Key[], steps: number): void {
  const counts = runCounts(rig.runs);
  const overwritten = new Set(rig.alerts.filter((a) => a.reason === 'overwrite').map((a) => `${keyPath(a.key)}#${a.seq}`));
  for (const key of chains) {
    for (let seq = 1; seq <= steps; seq++) {
      const step = `${keyPath(key)}#${seq}`;
      const runs = counts.get(step);
      if (overwritten.has(step)) assert.ok(runs === 1 || runs === 2, `${step} ran ${runs} times after a takeover`);
      else assert.equal(runs, 1, `${step} ran once`);
    }
  }
  assert.ok(overwritten.size <= 1, `at most one takeover on a loaded machine (${[...overwritten].join(', ')})`);
}

/** How many times each step ran, by `keyPath#seq`. */
export function runCounts(runs: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run, (counts.get(run) ?? 0) + 1);
  return counts;
}

/**
 * Memory and timers over many steps: after a warm-up, force a full GC, note the heap and the live
 * resources, run the steps, force GC again and compare. Each worker reuses one entity, scheduling
 * its next step before sending it, so the store itself does not grow.
 *
 * `process.getActiveResourcesInfo()` leaves out `unref()`'d timers, and the lease's timers are
 * unref'd; so async_hooks also follow every timer and handle created during the steps, and after
 * the keep-alive connections are closed, report those still alive with where they were created.
 */
import { createHook } from 'node:async_hooks';
import { relative } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Key } from '@google-cloud/datastore';
import { EXCLUDED, type KeySource, scheduledStep } from './entities';
import { STEP_DONE, expectReply } from './expect';
import { startStepServer, type Reply } from './server';
import type { Store } from '../src/types';

/** What the heap and the live resources looked like around the steps. */
export interface LeakReport {
  store: string;
  steps: number;
  seconds: number;
  handlerRuns: number;
  heapBeforeBytes: number;
  heapAfterBytes: number;
  heapGrowthBytes: number;
  /** Timers `process.getActiveResourcesInfo()` lists (ref'd ones only). */
  timersBefore: number;
  timersAfter: number;
  resourcesBefore: Record<string, number>;
  resourcesAfter: Record<string, number>;
  /**
   * Timers and handles (unref'd ones included; promises and ticks aside) created during the steps
   * and still alive once the HTTP connections are closed, by type and place of creation.
   */
  leftAlive: Record<string, number>;
  /** How many of `leftAlive` are timers. */
  timersLeftAlive: number;
  /** How many of those timers the library's own code (`src/`) created. */
  libraryTimersLeftAlive: number;
}

type Send = (key: Key, seq: number) => Promise<Reply>;

/**
 * Two passes of `steps` steps after `warmup`: the first measures the heap (forced GC before and
 * after) and the ref'd timers, untouched by instrumentation; the second follows every timer and
 * handle with async_hooks, which costs time and memory of its own.
 */
export async function measureLeak(storeName: string, store: Store, keys: KeySource, steps: number, warmup: number, concurrency: number): Promise<LeakReport> {
  const server = await startStepServer(store);
  try {
    const slots = keys.keys(`leak-${storeName.replace(/\W+/g, '-')}`, concurrency).map((key) => ({ key, seq: 0 }));
    await runSteps(store, server.send, slots, warmup);
    const gc = forceGc();
    await gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const resourcesBefore = resources();
    const runsBefore = server.runs();
    const started = Date.now();
    await runSteps(store, server.send, slots, steps);
    const seconds = (Date.now() - started) / 1000;
    const handlerRuns = server.runs() - runsBefore;
    await gc();
    const heapAfter = process.memoryUsage().heapUsed;
    const resourcesAfter = resources();

    const tracker = trackResources();
    await runSteps(store, server.send, slots, steps);
    server.dropConnections();
    await gc();
    await settle();
    const leftAlive = tracker.stop();
    return {
      store: storeName, steps, seconds, handlerRuns,
      heapBeforeBytes: heapBefore, heapAfterBytes: heapAfter, heapGrowthBytes: heapAfter - heapBefore,
      timersBefore: resourcesBefore.Timeout ?? 0, timersAfter: resourcesAfter.Timeout ?? 0,
      resourcesBefore, resourcesAfter, leftAlive,
      timersLeftAlive: countOf(leftAlive, (what) => what.startsWith('Timeout ')),
      libraryTimersLeftAlive: countOf(leftAlive, (what) => what.startsWith('Timeout ') && / src\//.test(what)),
    };
  } finally {
    await server.close();
  }
}

function countOf(counts: Record<string, number>, which: (what: string) => boolean): number {
  return Object.entries(counts).reduce((sum, [what, n]) => (which(what) ? sum + n : sum), 0);
}

/** Runs `count` steps, spread over the slots (one worker per slot). */
async function runSteps(store: Store, send: Send, slots: Array<{ key: Key; seq: number }>, count: number): Promise<void> {
  let left = count;
  const worker = async (slot: { key: Key; seq: number }): Promise<void> => {
    while (left > 0) {
      left -= 1;
      slot.seq += 1;
      const seq = slot.seq;
      await store.transaction(async (tx) => tx.put(slot.key, scheduledStep(seq), EXCLUDED));
      expectReply(await send(slot.key, seq), STEP_DONE, 'a step');
    }
  };
  await Promise.all(slots.map(worker));
}

/** Live resources by type (`Timeout`, `TCPSocketWrap`, ...), as `process.getActiveResourcesInfo()` lists them. */
export function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/** Resource types that live for a tick or a promise, not a leak's material. */
const SHORT_LIVED = new Set(['PROMISE', 'TickObject', 'Microtask']);

/** Follows timers and handles created from now on; `stop()` returns those still alive, by type and origin. */
function trackResources(): { stop(): Record<string, number> } {
  // The stack is captured at creation but formatted only for what is still alive at the end.
  const alive = new Map<number, { type: string; at: Error }>();
  const hook = createHook({
    init(id, type) {
      if (!SHORT_LIVED.has(type)) alive.set(id, { type, at: new Error() });
    },
    destroy(id) {
      alive.delete(id);
    },
  }).enable();
  return {
    stop() {
      hook.disable();
      const counts: Record<string, number> = {};
      for (const { type, at } of alive.values()) {
        const what = `${type} from ${origin(at.stack ?? '')}`;
        counts[what] = (counts[what] ?? 0) + 1;
      }
      return counts;
    },
  };
}

/** The first frame below the hook outside node's internals, else the first internal caller that is not timer plumbing. */
function origin(stack: string): string {
  const frames = stack.split('\n').slice(2).map((line) => line.trim().replace(/^at /, ''));
  const own = frames.find((f) => !f.includes('node:'));
  const where = own ?? frames.find((f) => !/async_hooks|internal\/timers|new Timeout|new Immediate/.test(f)) ?? 'unknown';
  const file = /^(.*?)\s*(?:^|\()(\/[^():]+):(\d+):\d+\)?$/.exec(where);
  return file ? `${file[1] || '<anonymous>'} ${relative(process.cwd(), file[2]!)}:${file[3]}` : where;
}

/** Lets closed sockets and their timers finish. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A full, forced GC: `global.gc` when node runs with `--expose-gc` (e.g. `NODE_OPTIONS=--expose-gc`),
 * else the same function obtained by setting the V8 flag at run time.
 */
export function forceGc(): () => Promise<void> {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  const collect = gc;
  return async () => {
    for (let i = 0; i < 3; i++) {
      collect();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
}

/**
 * Recurring work at scale (issue 39): N schedules (10,000 by default) all due at one tick, each on
 * its own fixed entity (the default: `LockerRecurringRun`, named by the schedule), on the legacy
 * emulator. Measured, in one run on one store:
 *
 * - the first tick, which writes the N declarations (nothing is due yet);
 * - `scheduleMany()` of N new chains, the kickoff every tick is built on (the reference);
 * - the tick at which all N are due: it checks the declarations, reads the due schedules, plans
 *   them, starts N chains through the bulk kickoff and settles the records.
 *
 * Time is the Locker's fake clock for the schedules (moved past the next minute between the two
 * ticks) and the wall clock for the measurements. Store calls are counted by a wrapper of the
 * store (`test/support/counting-store.ts`: one per call, a transaction is one) and RPCs on the
 * store's generated client (`test/support/datastore-spy.ts`). The queue only records.
 */
import { performance } from 'node:perf_hooks';
import type { Datastore, Key } from '@google-cloud/datastore';
import { DatastoreStore, Locker } from './library';
import { spyClient, RPC_METHODS, type SpiedClient } from '../test/support/datastore-spy';
import { countingStore, type CountingStore } from '../test/support/counting-store';
import { KeySource } from './entities';
import { totalRpcs, type RpcCounts } from './rpc-count';
import type { Queue, TaskRequest } from '../src/types';
import type { TickResult } from '../src/recurring/recurring-types';

/** One measured operation: its wall time, its store calls (by method) and its RPCs. */
export interface RecurringOp {
  ms: number;
  calls: number;
  byMethod: Record<string, number>;
  rpcs: RpcCounts;
}

/** What the recurring part measured. */
export interface RecurringReport {
  schedules: number;
  /** The first tick: the declarations written. */
  declare: RecurringOp & { declared: number };
  /** `scheduleMany()` of as many new chains. */
  bulk: RecurringOp;
  /** The tick at which every schedule is due. */
  due: RecurringOp & { result: TickResult };
}

/** A queue that only records. */
class RecordingQueue implements Queue {
  tasks = 0;
  async enqueue(_task: TaskRequest): Promise<void> {
    this.tasks += 1;
  }
}

/** Measures the three operations above on `schedules` schedules. */
export async function measureRecurring(datastore: Datastore, keys: KeySource, schedules: number): Promise<RecurringReport> {
  const spy = spyClient(datastore, { keepRequests: false });
  const counting = countingStore(new DatastoreStore(datastore, { client: spy.client }));
  const queue = new RecordingQueue();
  // A minute boundary 30 s ahead of the wall clock's minute: the first tick declares, the second (65 s on) finds all due.
  let now = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
  const scheduleNamespace = `${keys.namespace}-rec`;
  const locker = new Locker({ store: counting.store, queue, authenticate: false, clock: () => now, scheduleNamespace });
  try {
    // Untimed: the store's backend check, the JIT and the emulator, on a small bulk kickoff.
    const warm = await locker.scheduleMany(keys.keys('rec-warm', Math.min(schedules, 200)).map((key) => item(key)));
    if (warm.started !== Math.min(schedules, 200)) throw new Error(`the warm-up kickoff started ${warm.started} chains`);
    for (let i = 0; i < schedules; i++) locker.recurring(`bench-${i}`, { cron: '* * * * *', path: '/run' });

    let declared = 0;
    const declare = await measure(counting, spy, async () => {
      const r = await locker.tick();
      declared = r.declared;
      if (r.declared !== schedules || r.due !== 0) throw new Error(`the first tick declared ${r.declared} of ${schedules} schedules, ${r.due} due`);
    });
    const bulk = await measure(counting, spy, async () => {
      const r = await locker.scheduleMany(keys.keys('rec-bulk', schedules).map((key) => item(key)));
      if (r.started !== schedules) throw new Error(`scheduleMany started ${r.started} of ${schedules} chains`);
    });
    now += 65_000;
    let result: TickResult | undefined;
    const tasksBefore = queue.tasks;
    const due = await measure(counting, spy, async () => {
      result = await locker.tick();
      if (result.due !== schedules || result.started !== schedules || result.partial) throw new Error(`the due tick read ${result.due} and started ${result.started} of ${schedules} schedules${result.partial ? ', partial' : ''}`);
    });
    if (queue.tasks - tasksBefore !== schedules) throw new Error(`the due tick created ${queue.tasks - tasksBefore} tasks for ${schedules} runs`);
    return { schedules, declare: { ...declare, declared }, bulk, due: { ...due, result: result! } };
  } finally {
    await locker.shutdown();
    await counting.store.shutdown?.();
    await spy.close();
  }
}

function item(key: Key): { key: Key; entity: { count: number; label: string }; path: string } {
  return { key, entity: { count: 0, label: 'bench' }, path: '/step' };
}

async function measure(counting: CountingStore, spy: SpiedClient, fn: () => Promise<void>): Promise<RecurringOp> {
  counting.reset();
  const startRpc = spy.calls.length;
  const start = performance.now();
  await fn();
  const ms = performance.now() - start;
  const rpcs = Object.fromEntries(RPC_METHODS.map((m) => [m, 0])) as RpcCounts;
  for (const method of spy.calls.slice(startRpc)) rpcs[method] += 1;
  return { ms, calls: counting.calls, byMethod: Object.fromEntries(counting.byMethod), rpcs };
}

/** The table's lines for the recurring part. */
export function recurringLines(r: RecurringReport): string[] {
  const n = r.schedules;
  const per = (x: number): string => (x / n).toFixed(3);
  const row = (label: string, op: RecurringOp, ratio: string): string =>
    `${label.padEnd(44)}${op.ms.toFixed(0).padStart(9)}${ratio.padStart(13)}${String(op.calls).padStart(8)}${per(op.calls).padStart(10)}${String(Math.round(totalRpcs(op.rpcs))).padStart(7)}  ${methods(op)}`;
  return [
    `Recurring work: ${n} schedules all due at one tick, each on its own entity (a queue that only records)`,
    `${''.padEnd(44)}${'ms'.padStart(9)}${'ratio'.padStart(13)}${'calls'.padStart(8)}${'per sched'.padStart(10)}${'RPCs'.padStart(7)}  store calls by method`,
    row(`scheduleMany() of ${n} new chains`, r.bulk, '(reference)'),
    row(`the tick at which all ${n} are due`, r.due, `${(r.due.ms / r.bulk.ms).toFixed(2)} × bulk`),
    row(`the first tick (writes ${r.declare.declared} declarations)`, r.declare, `${(r.declare.ms / r.bulk.ms).toFixed(2)} × bulk`),
  ];
}

/** The JSON fields of the recurring part. */
export function recurringJson(r: RecurringReport): Record<string, unknown> {
  return {
    recurringSchedules: r.schedules,
    recurringTickMs: Math.round(r.due.ms),
    recurringBulkMs: Math.round(r.bulk.ms),
    recurringTickToBulk: Math.round((r.due.ms / r.bulk.ms) * 100) / 100,
    recurringTickCallsPerSchedule: Math.round((r.due.calls / r.schedules) * 1000) / 1000,
    recurringBulkCallsPerChain: Math.round((r.bulk.calls / r.schedules) * 1000) / 1000,
    recurringTickRpcsPerSchedule: Math.round((totalRpcs(r.due.rpcs) / r.schedules) * 1000) / 1000,
    recurringBulkRpcsPerChain: Math.round((totalRpcs(r.bulk.rpcs) / r.schedules) * 1000) / 1000,
    recurringTickCalls: r.due.byMethod,
    recurringTickStarted: r.due.result.started,
    recurringDeclareMs: Math.round(r.declare.ms),
    recurringDeclareCallsPerSchedule: Math.round((r.declare.calls / r.schedules) * 1000) / 1000,
    recurringDeclareToBulk: Math.round((r.declare.ms / r.bulk.ms) * 100) / 100,
  };
}

function methods(op: RecurringOp): string {
  return Object.entries(op.byMethod).sort(([a], [b]) => a.localeCompare(b)).map(([m, c]) => `${m} ${c}`).join(', ');
}

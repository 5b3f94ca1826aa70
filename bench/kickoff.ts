/**
 * Many kickoffs at once (issue 21): kickoffs per second for N new chains (1,000 by default) on the
 * legacy emulator, three ways, in interleaved rounds on fresh keys:
 *
 * - the loop: `locker.schedule()` per chain at concurrency 16;
 * - the bulk call: one `locker.scheduleMany()`;
 * - the floor: the same entities, with lock fields, and their ledger records upserted with the
 *   plain client in batches of 500 mutations, one after another (what the bulk call cannot beat).
 *
 * The queue only records (task creation costs nothing here). The RPCs of each way are counted on
 * the store's generated client, per 1,000 chains.
 */
import { performance } from 'node:perf_hooks';
import type { Datastore, Key } from '@google-cloud/datastore';
import { DatastoreStore, Locker } from './library';
import { spyClient, type SpiedClient } from '../test/support/datastore-spy';
import { EXCLUDED, KeySource } from './entities';
import { totalRpcs, type RpcCounts } from './rpc-count';
import { RPC_METHODS } from '../test/support/datastore-spy';
import type { Queue, TaskRequest } from '../src/types';

/** The targets: bulk against the loop and against the floor (kickoffs per second, medians). */
export const KICKOFF_TARGETS = Object.freeze({ bulkToLoop: 5, bulkToFloor: 0.5 });

/** What the kickoff part measured. */
export interface KickoffReport {
  chains: number;
  rounds: number;
  /** Kickoffs per second of each round. */
  loop: number[];
  bulk: number[];
  floor: number[];
  /** RPCs per 1,000 chains, by method. */
  loopRpcs: RpcCounts;
  bulkRpcs: RpcCounts;
}

/** Kickoffs at concurrency 16 through `schedule()`. */
const LOOP_CONCURRENCY = 16;

/** A queue that only records the task names: task creation costs nothing in this measurement. */
class RecordingQueue implements Queue {
  readonly names: string[] = [];
  async enqueue(task: TaskRequest): Promise<void> {
    this.names.push(task.name);
  }
}

/** Measures `rounds` interleaved rounds of `chains` kickoffs each way. */
export async function measureKickoffs(datastore: Datastore, keys: KeySource, chains: number, rounds: number): Promise<KickoffReport> {
  const spy = spyClient(datastore, { keepRequests: false });
  const store = new DatastoreStore(datastore, { client: spy.client });
  const queue = new RecordingQueue();
  const locker = new Locker({ store, queue, authenticate: false });
  const report: KickoffReport = { chains, rounds, loop: [], bulk: [], floor: [], loopRpcs: zero(), bulkRpcs: zero() };
  try {
    // Untimed: the store's backend check, and a first pass of each way for the JIT and the emulator.
    await timed(() => loop(locker, keys.keys('kick-warm-loop', Math.min(chains, 200))), 1);
    await timed(() => bulk(locker, keys.keys('kick-warm-bulk', Math.min(chains, 200))), 1);
    report.loopRpcs = await counted(spy, chains, () => loop(locker, keys.keys('kick-rpc-loop', chains)));
    report.bulkRpcs = await counted(spy, chains, () => bulk(locker, keys.keys('kick-rpc-bulk', chains)));
    for (let round = 0; round < rounds; round++) {
      report.floor.push(await timed(() => floor(datastore, keys.keys('kick-floor', chains)), chains));
      report.loop.push(await timed(() => loop(locker, keys.keys('kick-loop', chains)), chains));
      report.bulk.push(await timed(() => bulk(locker, keys.keys('kick-bulk', chains)), chains));
    }
  } finally {
    await locker.shutdown();
    await store.shutdown();
    await spy.close();
  }
  return report;
}

/** `schedule()` per key, 16 at a time. */
async function loop(locker: Locker, all: Key[]): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < all.length) {
      const key = all[next++]!;
      await locker.schedule(key, { count: 0, label: 'bench' }, '/step');
    }
  };
  await Promise.all(Array.from({ length: LOOP_CONCURRENCY }, worker));
}

/** One `scheduleMany()` call. */
async function bulk(locker: Locker, all: Key[]): Promise<void> {
  const result = await locker.scheduleMany(all.map((key) => ({ key, entity: { count: 0, label: 'bench' }, path: '/step' })));
  if (result.started !== all.length) throw new Error(`scheduleMany started ${result.started} of ${all.length} chains`);
}

/** The entities with lock fields and their ledger records, upserted 500 mutations at a time. */
async function floor(datastore: Datastore, all: Key[]): Promise<void> {
  const now = new Date();
  const mutations = all.flatMap((key, i) => {
    const task = `floor-${key.name ?? i}-1`;
    const record = datastore.key({ namespace: key.namespace, path: ['LockerOutbox', task] });
    return [
      { key, excludeFromIndexes: EXCLUDED, data: { count: 0, label: 'bench', lock_ts: now, lock_req: '', lock_seq: 1, lock_try: 0, lock_state: 'scheduled', lock_chain: 'floor', lock_task: task } },
      { key: record, excludeFromIndexes: LEDGER_EXCLUDED, data: { key, seq: 1, chain: 'floor', path: '/step', body: '', createdAt: now, task, sends: 1, sentAt: now, failures: 0, due: new Date(now.getTime() + 60_000) } },
    ];
  });
  for (let start = 0; start < mutations.length; start += 500) await datastore.upsert(mutations.slice(start, start + 500));
}

const LEDGER_EXCLUDED = ['key', 'seq', 'chain', 'path', 'body', 'createdAt', 'task', 'sends', 'sentAt', 'failures'];

/** Kickoffs per second of one run of `fn` that starts `chains` chains. */
async function timed(fn: () => Promise<void>, chains: number): Promise<number> {
  const start = performance.now();
  await fn();
  return chains / ((performance.now() - start) / 1000);
}

/** RPCs per 1,000 chains of one untimed run of `fn`. */
async function counted(spy: SpiedClient, chains: number, fn: () => Promise<void>): Promise<RpcCounts> {
  const start = spy.calls.length;
  await fn();
  const counts = zero();
  for (const method of spy.calls.slice(start)) counts[method] += 1000 / chains;
  return counts;
}

function zero(): RpcCounts {
  return Object.fromEntries(RPC_METHODS.map((m) => [m, 0])) as RpcCounts;
}

/** The table's lines for the kickoff part. */
export function kickoffLines(r: KickoffReport): string[] {
  const f = kickoffFigures(r);
  const verdict = (ratio: number, target: number): string => `≥ ${target} ${ratio >= target ? 'met' : 'MISSED'}`;
  const row = (label: string, rate: number, ratio: string, target: string, rpcs: string): string =>
    `${label.padEnd(40)}${rate.toFixed(0).padStart(10)}${ratio.padStart(13)}${target.padStart(14)}  ${rpcs}`;
  return [
    `Kickoffs of ${r.chains} new chains, ${r.rounds} interleaved rounds (a queue that only records)`,
    `${''.padEnd(40)}${'chains/s'.padStart(10)}${'ratio'.padStart(13)}${'target'.padStart(14)}  RPCs per 1,000 chains`,
    row('raw batched upsert (500 mutations)', f.floor, '(floor)', '', 'commit 4 (the plain client: not counted)'),
    row(`schedule() loop at concurrency ${LOOP_CONCURRENCY}`, f.loop, `${(f.loop / f.floor).toFixed(2)} × floor`, '', describe(r.loopRpcs)),
    row('scheduleMany()', f.bulk, `${f.bulkToLoop.toFixed(2)} × loop`, verdict(f.bulkToLoop, KICKOFF_TARGETS.bulkToLoop), describe(r.bulkRpcs)),
    row('', f.bulk, `${f.bulkToFloor.toFixed(2)} × floor`, verdict(f.bulkToFloor, KICKOFF_TARGETS.bulkToFloor), ''),
  ];
}

/** The JSON fields of the kickoff part. */
export function kickoffJson(r: KickoffReport): Record<string, unknown> {
  const f = kickoffFigures(r);
  return {
    kickoffChains: r.chains,
    kickoffRounds: r.rounds,
    kickoffFloorPerSec: Math.round(f.floor),
    kickoffLoopPerSec: Math.round(f.loop),
    kickoffBulkPerSec: Math.round(f.bulk),
    kickoffBulkToLoop: Math.round(f.bulkToLoop * 100) / 100,
    kickoffBulkToFloor: Math.round(f.bulkToFloor * 100) / 100,
    kickoffLoopRpcsPer1000: Math.round(totalRpcs(r.loopRpcs)),
    kickoffBulkRpcsPer1000: Math.round(totalRpcs(r.bulkRpcs)),
    kickoffTargetsMet: f.bulkToLoop >= KICKOFF_TARGETS.bulkToLoop && f.bulkToFloor >= KICKOFF_TARGETS.bulkToFloor,
  };
}

function kickoffFigures(r: KickoffReport): { floor: number; loop: number; bulk: number; bulkToLoop: number; bulkToFloor: number } {
  const floor = median(r.floor);
  const loop = median(r.loop);
  const bulk = median(r.bulk);
  return { floor, loop, bulk, bulkToLoop: bulk / loop, bulkToFloor: bulk / floor };
}

function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function describe(counts: RpcCounts): string {
  const parts = RPC_METHODS.filter((m) => counts[m] > 0).map((m) => `${m} ${Math.round(counts[m])}`);
  return `${Math.round(totalRpcs(counts))} (${parts.join(', ')})`;
}

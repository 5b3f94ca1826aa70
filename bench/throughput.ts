/**
 * Throughput at a given concurrency: batches of raw transactions, of full steps, of the step's
 * limit (`limit.ts`: the lookup, two commits and the HTTP round trip, no lease logic) and of that
 * limit with the step's record read in its lookup, each on its own entities, in turn (rotating
 * which goes first) so all four meet the same noise. The steps
 * carry a ledger record, as scheduled steps do, so each also removes its record after its answer;
 * the commits they send are counted (a spy on the store's client), removals sent after a batch
 * ended included.
 */
import { performance } from 'node:perf_hooks';
import type { Key } from '@google-cloud/datastore';
import { BENCH_CHAIN, seedWithRecords } from './entities';
import { STEP_DONE, expectReply } from './expect';
import { rawTransaction } from './floor';
import { seededSteps, type Target } from './latency';
import { stepLimit, stepLimitWithRecord } from './limit';
import { taskName } from '../src/rules/ledger-record';
import type { SpiedClient } from '../test/support/datastore-spy';

/** Operations per second of each batch, this process's CPU time per operation (µs) in each batch, and every operation's latency (ms). */
export interface ThroughputSamples {
  floorOpsPerSec: number[];
  stepOpsPerSec: number[];
  limitOpsPerSec: number[];
  /** The limit whose lookup also reads the step's ledger record, as a step's does (`stepLimitWithRecord`). */
  limitRecordOpsPerSec: number[];
  floorCpuMicros: number[];
  stepCpuMicros: number[];
  limitCpuMicros: number[];
  limitRecordCpuMicros: number[];
  floorLatency: number[];
  stepLatency: number[];
  limitLatency: number[];
  limitRecordLatency: number[];
  /** Commits the steps sent, all batches together, and the steps. */
  stepCommits: number;
  /** Lookups the steps sent, all batches together: one each (its first read), when its record's removal reads nothing. */
  stepLookups: number;
  steps: number;
}

/** Where one batch records its results. */
export interface BatchRecord {
  rates: number[];
  cpu: number[];
  latencies: number[];
}

/** How long after a step batch its last removals may still go out, ms (the removal waits up to 10 ms for a group). */
const SETTLE_MS = 100;

export async function measureThroughput(t: Target, batches: number, opsPerWorker: number, concurrency: number, spy: SpiedClient): Promise<ThroughputSamples> {
  const perBatch = opsPerWorker * concurrency;
  const floorKeys = await seededSteps(t, 'floor16', batches * perBatch);
  const limitKeys = await seededSteps(t, 'limit16', batches * perBatch);
  const stepKeys = t.keys.keys('step16', batches * perBatch);
  await seedWithRecords(t.datastore, stepKeys);
  const limitRecordKeys = t.keys.keys('limitrec16', batches * perBatch);
  await seedWithRecords(t.datastore, limitRecordKeys);
  const out: ThroughputSamples = {
    floorOpsPerSec: [], stepOpsPerSec: [], limitOpsPerSec: [], limitRecordOpsPerSec: [],
    floorCpuMicros: [], stepCpuMicros: [], limitCpuMicros: [], limitRecordCpuMicros: [],
    floorLatency: [], stepLatency: [], limitLatency: [], limitRecordLatency: [], stepCommits: 0, stepLookups: 0, steps: 0,
  };
  const floorRecord = { rates: out.floorOpsPerSec, cpu: out.floorCpuMicros, latencies: out.floorLatency };
  const stepRecord = { rates: out.stepOpsPerSec, cpu: out.stepCpuMicros, latencies: out.stepLatency };
  const limitRecord = { rates: out.limitOpsPerSec, cpu: out.limitCpuMicros, latencies: out.limitLatency };
  const limitWithRecordRecord = { rates: out.limitRecordOpsPerSec, cpu: out.limitRecordCpuMicros, latencies: out.limitRecordLatency };
  const limit = { store: t.server.locker.config.store, ping: () => t.server.ping() };
  const slice = (keys: Key[], b: number): Key[] => keys.slice(b * perBatch, (b + 1) * perBatch);
  const kinds: Array<(b: number) => Promise<void>> = [
    (b) => batch(slice(floorKeys, b), concurrency, async (key) => void (await rawTransaction(t.datastore, key)), floorRecord),
    async (b) => {
      const before = calls(spy, 'commit');
      const lookupsBefore = calls(spy, 'lookup');
      await batch(slice(stepKeys, b), concurrency, async (key) => expectReply(await t.server.send(key, 1, BENCH_CHAIN), STEP_DONE, 'a step'), stepRecord);
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS)); // untimed: the last removals go out
      out.stepCommits += calls(spy, 'commit') - before;
      out.stepLookups += calls(spy, 'lookup') - lookupsBefore;
      out.steps += perBatch;
    },
    (b) => batch(slice(limitKeys, b), concurrency, (key) => stepLimit(limit, key), limitRecord),
    (b) => batch(slice(limitRecordKeys, b), concurrency, (key) => stepLimitWithRecord(limit, key, taskName(key, BENCH_CHAIN, 1)), limitWithRecordRecord),
  ];
  for (let b = 0; b < batches; b++) {
    for (let j = 0; j < kinds.length; j++) await kinds[(b + j) % kinds.length]!(b);
  }
  return out;
}

function calls(spy: SpiedClient, rpc: 'commit' | 'lookup'): number {
  let n = 0;
  for (const method of spy.calls) if (method === rpc) n++;
  return n;
}

/** Runs one operation per key with `concurrency` workers; records ops/s, CPU per op and each latency. */
export async function batch(keys: Key[], concurrency: number, op: (key: Key) => Promise<void>, record: BatchRecord): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < keys.length) {
      const key = keys[next++]!;
      const start = performance.now();
      await op(key);
      record.latencies.push(performance.now() - start);
    }
  };
  const start = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const used = process.cpuUsage(cpu);
  record.rates.push(keys.length / ((performance.now() - start) / 1000));
  record.cpu.push((used.user + used.system) / keys.length);
}

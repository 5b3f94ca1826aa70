/**
 * Throughput at a given concurrency: batches of raw transactions and batches of full steps, each
 * on its own entities, alternating (and swapping which goes first) so both meet the same noise.
 */
import { performance } from 'node:perf_hooks';
import type { Key } from '@google-cloud/datastore';
import { STEP_DONE, expectReply } from './expect';
import { rawTransaction } from './floor';
import { seededSteps, type Target } from './latency';

/** Operations per second of each batch, this process's CPU time per operation (µs) in each batch, and every operation's latency (ms). */
export interface ThroughputSamples {
  floorOpsPerSec: number[];
  stepOpsPerSec: number[];
  floorCpuMicros: number[];
  stepCpuMicros: number[];
  floorLatency: number[];
  stepLatency: number[];
}

/** Where one batch records its results. */
interface BatchRecord {
  rates: number[];
  cpu: number[];
  latencies: number[];
}

export async function measureThroughput(t: Target, batches: number, opsPerWorker: number, concurrency: number): Promise<ThroughputSamples> {
  const perBatch = opsPerWorker * concurrency;
  const floorKeys = await seededSteps(t, 'floor16', batches * perBatch);
  const stepKeys = await seededSteps(t, 'step16', batches * perBatch);
  const out: ThroughputSamples = { floorOpsPerSec: [], stepOpsPerSec: [], floorCpuMicros: [], stepCpuMicros: [], floorLatency: [], stepLatency: [] };
  const floorRecord = { rates: out.floorOpsPerSec, cpu: out.floorCpuMicros, latencies: out.floorLatency };
  const stepRecord = { rates: out.stepOpsPerSec, cpu: out.stepCpuMicros, latencies: out.stepLatency };
  const floorBatch = (b: number) =>
    batch(floorKeys.slice(b * perBatch, (b + 1) * perBatch), concurrency, async (key) => void (await rawTransaction(t.datastore, key)), floorRecord);
  const stepBatch = (b: number) =>
    batch(stepKeys.slice(b * perBatch, (b + 1) * perBatch), concurrency, async (key) => expectReply(await t.server.send(key, 1), STEP_DONE, 'a step'), stepRecord);
  for (let b = 0; b < batches; b++) {
    if (b % 2 === 0) {
      await floorBatch(b);
      await stepBatch(b);
    } else {
      await stepBatch(b);
      await floorBatch(b);
    }
  }
  return out;
}

/** Runs one operation per key with `concurrency` workers; records ops/s, CPU per op and each latency. */
async function batch(keys: Key[], concurrency: number, op: (key: Key) => Promise<void>, record: BatchRecord): Promise<void> {
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

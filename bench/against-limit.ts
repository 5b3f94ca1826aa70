/**
 * A step against its physical limit (`limit.ts`) on any store, the same code on each: at
 * concurrency 1, interleaved rounds of one step through `handle()` and one run of the limit (which
 * goes first alternates); at concurrency 16, alternating batches of steps and of the limit. The
 * definitions are those of the Datastore part (`latency.ts`, `throughput.ts`): a step at
 * concurrency 1 carries no ledger record, one at concurrency 16 carries its record (its task
 * names its chain, its first lookup reads the record, it removes the record after its answer),
 * and the limit is one read, two conditional writes through the store's own `read` and
 * `replaceIfUnchanged`, and an HTTP round trip. At concurrency 16 a third kind of batch runs the
 * limit whose read also reads the step's record (`stepLimitWithRecord`, as the Datastore part's
 * throughput does), which tells what the record costs the store from what the library's own work
 * costs. This is how the Native-mode store is measured beside the two Datastore emulators, in one run.
 */
import { performance } from 'node:perf_hooks';
import type { Key } from '@google-cloud/datastore';
import type { Store } from '../src/types';
import { BENCH_CHAIN, type KeySource } from './entities';
import { STEP_DONE, expectReply } from './expect';
import { stepLimit, stepLimitWithRecord } from './limit';
import { taskName } from '../src/rules/ledger-record';
import { startStepServer } from './server';
import type { Settings } from './settings';
import { seedSteps, seedStepsWithRecords } from './store-seed';
import { batch, type BatchRecord } from './throughput';

/** One backend's samples. */
export interface AgainstLimitSamples {
  backend: string;
  /** Milliseconds per operation at concurrency 1. */
  step: number[];
  limit: number[];
  /** Operations per second of each batch at the throughput part's concurrency, and each operation's latency. */
  stepOpsPerSec: number[];
  limitOpsPerSec: number[];
  /** The limit whose read also reads the step's ledger record, as a step's does (`stepLimitWithRecord`). */
  limitRecordOpsPerSec: number[];
  stepLatency: number[];
  limitLatency: number[];
  limitRecordLatency: number[];
}

/** How long after a step batch its last record removals may still go out, ms (as in `throughput.ts`). */
const SETTLE_MS = 100;

/** Measures a step and its limit on `store`, its keys from `keys`; `progress` tells what runs. */
export async function measureAgainstLimit(backend: string, store: Store, keys: KeySource, s: Settings, progress: (text: string) => void): Promise<AgainstLimitSamples> {
  const server = await startStepServer(store);
  const limit = { store, ping: () => server.ping() };
  const step = async (key: Key, chain?: string): Promise<void> => expectReply(await server.send(key, 1, chain), STEP_DONE, 'a step');
  const seeded = async (prefix: string, count: number): Promise<Key[]> => {
    const fresh = keys.keys(prefix, count);
    await seedSteps(store, fresh);
    return fresh;
  };
  const out: AgainstLimitSamples = { backend, step: [], limit: [], stepOpsPerSec: [], limitOpsPerSec: [], limitRecordOpsPerSec: [], stepLatency: [], limitLatency: [], limitRecordLatency: [] };
  try {
    progress(`${backend}: warming up, ${s.jvmWarmup} steps and as many limits at concurrency ${s.concurrency}`);
    const warmSteps = await seeded('warm-step', s.jvmWarmup);
    const warmLimits = await seeded('warm-limit', s.jvmWarmup);
    let next = 0;
    const warmer = async (): Promise<void> => {
      while (next < s.jvmWarmup) {
        const i = next++;
        await step(warmSteps[i]!);
        await stepLimit(limit, warmLimits[i]!);
      }
    };
    await Promise.all(Array.from({ length: s.concurrency }, warmer));

    progress(`${backend}: a step and its limit at concurrency 1, ${s.warmup} + ${s.rounds} interleaved rounds`);
    const total = s.warmup + s.rounds;
    const stepKeys = await seeded('step', total);
    const limitKeys = await seeded('limit', total);
    for (let i = 0; i < total; i++) {
      const kinds: Array<[number[], () => Promise<void>]> = [[out.step, () => step(stepKeys[i]!)], [out.limit, () => stepLimit(limit, limitKeys[i]!)]];
      for (let j = 0; j < kinds.length; j++) {
        const [samples, run] = kinds[(i + j) % kinds.length]!;
        const start = performance.now();
        await run();
        if (i >= s.warmup) samples.push(performance.now() - start);
      }
    }

    const perBatch = s.batchOps * s.concurrency;
    progress(`${backend}: steps and their limit at concurrency ${s.concurrency}, ${s.batches} alternating batches of ${perBatch}`);
    const stepKeys16 = keys.keys('step16', s.batches * perBatch);
    await seedStepsWithRecords(store, stepKeys16);
    const limitKeys16 = await seeded('limit16', s.batches * perBatch);
    const limitRecordKeys16 = keys.keys('limitrec16', s.batches * perBatch);
    await seedStepsWithRecords(store, limitRecordKeys16);
    const slice = (all: Key[], b: number): Key[] => all.slice(b * perBatch, (b + 1) * perBatch);
    const stepRecord: BatchRecord = { rates: out.stepOpsPerSec, cpu: [], latencies: out.stepLatency };
    const limitRecord: BatchRecord = { rates: out.limitOpsPerSec, cpu: [], latencies: out.limitLatency };
    const limitWithRecord: BatchRecord = { rates: out.limitRecordOpsPerSec, cpu: [], latencies: out.limitRecordLatency };
    const kinds: Array<(b: number) => Promise<void>> = [
      async (b) => {
        await batch(slice(stepKeys16, b), s.concurrency, (key) => step(key, BENCH_CHAIN), stepRecord);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS)); // untimed: the last removals go out
      },
      (b) => batch(slice(limitKeys16, b), s.concurrency, (key) => stepLimit(limit, key), limitRecord),
      (b) => batch(slice(limitRecordKeys16, b), s.concurrency, (key) => stepLimitWithRecord(limit, key, taskName(key, BENCH_CHAIN, 1)), limitWithRecord),
    ];
    for (let b = 0; b < s.batches; b++) {
      for (let j = 0; j < kinds.length; j++) await kinds[(b + j) % kinds.length]!(b);
    }
  } finally {
    await server.close();
  }
  return out;
}

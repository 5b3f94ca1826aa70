/**
 * What the OpenTelemetry hooks cost when no SDK is registered (the benchmark registers none): the
 * same step through `handle()` on two Lockers in this process, one with the hooks (the default:
 * `@opentelemetry/api` is installed here, so each phase starts the API's non-recording span and
 * each count goes to its no-op meter) and one with `telemetry: false`. In-memory stores, so the
 * step is the library's own work and an HTTP round trip on loopback, with nothing from the
 * emulator to hide a difference in. Rounds alternate which Locker goes first; warm-up rounds are
 * thrown away.
 */
import { performance } from 'node:perf_hooks';
import type { Key } from '@google-cloud/datastore';
import { MemoryStore } from './library';
import { Attr, type Telemetry } from '../src/telemetry/telemetry';
import { EXCLUDED, type KeySource, scheduledStep } from './entities';
import { STEP_DONE, expectReply } from './expect';
import { startStepServer, type StepServer } from './server';

/** Milliseconds per step, with the hooks and without them. */
export interface TelemetryReport {
  /** Whether the first Locker's hooks reached the API (they must, or the row measures nothing). */
  hooksReachApi: boolean;
  withHooks: number[];
  without: number[];
  /** The hooks of one step alone (three spans, three counts), µs: through the API with no SDK, and off. */
  hooksMicros: { api: number; off: number };
}

/** Rounds of the hooks alone. */
const HOOK_ROUNDS = 100_000;

export async function measureTelemetry(keys: KeySource, rounds: number, warmup: number): Promise<TelemetryReport> {
  const projectId = 'bench';
  const hooked = await startStepServer(new MemoryStore({ projectId }));
  const plain = await startStepServer(new MemoryStore({ projectId }), { telemetry: false });
  const report: TelemetryReport = {
    hooksReachApi: hooked.locker.telemetry.enabled && !plain.locker.telemetry.enabled, withHooks: [], without: [],
    hooksMicros: { api: await hooksAlone(hooked.locker.telemetry, keys.key('hooks')), off: await hooksAlone(plain.locker.telemetry, keys.key('hooks')) },
  };
  try {
    for (let i = 0; i < rounds + warmup; i++) {
      const key = keys.key('otel');
      const order: Array<[StepServer, number[]]> = [[hooked, report.withHooks], [plain, report.without]];
      if (i % 2 === 1) order.reverse();
      for (const [server, samples] of order) {
        const ms = await timedStep(server, key);
        if (i >= warmup) samples.push(ms);
      }
    }
  } finally {
    await hooked.close();
    await plain.close();
  }
  return report;
}

async function timedStep(server: StepServer, key: Key): Promise<number> {
  await server.locker.config.store.transaction(async (tx) => tx.put(key, scheduledStep(1), EXCLUDED));
  const start = performance.now();
  const reply = await server.send(key, 1);
  const ms = performance.now() - start;
  expectReply(reply, STEP_DONE, 'a step on the in-memory store');
  return ms;
}

/** µs per step that the hooks of one step take when they wrap nothing: the spans of take, run and finish and their counts. */
async function hooksAlone(telemetry: Telemetry, key: Key): Promise<number> {
  const step = { key, seq: 1, chain: 'bench', attempt: 'bench' };
  const nothing = async (): Promise<number> => 1;
  const start = performance.now();
  for (let i = 0; i < HOOK_ROUNDS; i++) {
    await telemetry.span('take', step, nothing);
    await telemetry.span('run', step, nothing);
    await telemetry.span('finish', step, nothing);
    telemetry.count('take', key);
    telemetry.count('run', key, { [Attr.outcome]: 'ok' });
    telemetry.count('finish', key, { [Attr.outcome]: 'complete' });
  }
  return ((performance.now() - start) * 1000) / HOOK_ROUNDS;
}

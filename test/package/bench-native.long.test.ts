/**
 * `npm run bench:native` runs end to end: a tiny round of `bench/step.ts` with `BENCH_ONLY=native`,
 * in a child process, starts the Firestore emulator in Native mode itself, measures a step against
 * its limit on it and on both Datastore-mode emulators, prints a row of each at concurrency 1 and
 * 16, and ends with one JSON line. In `npm run test:long` only: it starts a JVM of its own (the
 * smoke test of the whole benchmark, bench.test.ts, leaves this part out). No timing is asserted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runBench } from '../support/bench-run';

/** Sizes for a round of a few seconds on each backend. */
const TINY = { BENCH_ONLY: 'native', BENCH_QUICK: '1', BENCH_JVM_WARMUP: '20', BENCH_WARMUP: '2', BENCH_ROUNDS: '6', BENCH_BATCHES: '2', BENCH_BATCH_OPS: '2' };

const BACKENDS = ['legacy Datastore emulator', 'Firestore emulator (Datastore mode)', 'Firestore emulator (Native mode)'];

describe('npm run bench:native', () => {
  it('prints a step against its limit on each emulator at concurrency 1 and 16, then one JSON line', { timeout: 260_000 }, async () => {
    const { code, stdout, stderr } = await runBench(TINY, 240_000);
    assert.equal(code, 0, `the benchmark failed:\n${stderr}`);
    const lines = stdout.trimEnd().split('\n');
    const table = lines.slice(0, -1);
    for (const heading of ['At concurrency 1:', 'At concurrency 16:', "At concurrency 16, the limit whose read also reads the step's record"]) {
      const at = table.findIndex((line) => line.startsWith(heading));
      assert.ok(at >= 0, `the table has a section "${heading}"`);
      // After the heading and its column names, one row per backend, in order.
      assert.deepEqual(table.slice(at + 2, at + 2 + BACKENDS.length).map((line) => BACKENDS.find((b) => line.startsWith(b))), BACKENDS);
    }
    const result = JSON.parse(lines.at(-1)!) as { againstLimit: Array<Record<string, unknown>>; nativeStepToLimit: unknown; nativeThroughput16ToLimit: unknown; nativeTargetsMet: unknown };
    assert.deepEqual(result.againstLimit.map((r) => r.backend), BACKENDS);
    for (const r of result.againstLimit) {
      for (const name of ['stepMs', 'stepLimitMs', 'stepToLimit', 'stepOpsPerSec16', 'limitOpsPerSec16', 'throughput16ToLimit', 'limitRecordOpsPerSec16', 'limitWithRecordToLimit16', 'throughput16ToLimitWithRecord']) {
        assert.ok(typeof r[name] === 'number' && Number.isFinite(r[name]) && r[name] > 0, `${String(r.backend)}: ${name} is a positive number, got ${String(r[name])}`);
      }
      assert.equal(typeof r.targetsMet, 'boolean');
      const [toLimit, recordToLimit, toRecord] = [r.throughput16ToLimit, r.limitWithRecordToLimit16, r.throughput16ToLimitWithRecord] as number[];
      assert.ok(Math.abs(toLimit! / recordToLimit! - toRecord!) < 0.02, `${String(r.backend)}: steps ÷ the limit with its record is steps ÷ the limit over the two limits' ratio`);
    }
    const native = result.againstLimit[2]!;
    assert.equal(result.nativeStepToLimit, native.stepToLimit);
    assert.equal(result.nativeThroughput16ToLimit, native.throughput16ToLimit);
    assert.equal(typeof result.nativeTargetsMet, 'boolean');
  });
});

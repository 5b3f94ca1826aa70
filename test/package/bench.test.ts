/**
 * The benchmark runs end to end: a tiny round of `bench/step.ts` against the emulator, in a child
 * process as `npm run bench` runs it, prints its table and ends with one JSON line that scripts
 * can compare. No timing is asserted: speed is the benchmark's business, not a test's.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runBench } from '../support/bench-run';

/** Sizes for a round of a few seconds. */
const TINY = {
  BENCH_QUICK: '1',
  BENCH_JVM_WARMUP: '20',
  BENCH_WARMUP: '2',
  BENCH_ROUNDS: '6',
  BENCH_BATCHES: '2',
  BENCH_BATCH_OPS: '2',
  BENCH_LEAK_WARMUP: '16',
  BENCH_LEAK_STEPS: '64',
  BENCH_LEAK_STORE: 'both',
  BENCH_SIMULTANEOUS_ROUNDS: '2',
  BENCH_KICKOFF_CHAINS: '50',
  BENCH_KICKOFF_ROUNDS: '1',
  BENCH_FANOUT_CHILDREN: '30',
  BENCH_CONSOLE_SIZES: '400,800',
  BENCH_RECURRING_SCHEDULES: '200',
  // The last part starts the Native-mode emulator's JVM: bench-native.long.test.ts runs it alone.
  BENCH_NATIVE: '0',
};

describe('npm run bench', () => {
  it('prints a table and, last, one JSON line with the medians, the ratios to the floor and the memory check', { timeout: 200_000 }, async () => {
    const { code, stdout, stderr } = await runBench(TINY, 180_000);
    assert.equal(code, 0, `the benchmark failed:\n${stderr}`);
    const lines = stdout.trimEnd().split('\n');
    const table = lines.slice(0, -1).join('\n');
    for (const row of ['raw read-write transaction', 'step through handle()', 'duplicate of a finished step', 'duplicate of a held step', 'steps through handle()', 'Memory and timers over 64 steps', 'OpenTelemetry hooks with no SDK registered', 'step with the hooks (API, no SDK)']) {
      assert.ok(table.includes(row), `the table shows "${row}"`);
    }

    const result = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    for (const name of ['floorMs', 'stepMs', 'duplicateFinishedMs', 'duplicateHeldMs', 'floorOpsPerSec16', 'stepOpsPerSec16', 'stepToFloor', 'duplicateToFloor', 'throughput16ToFloor',
      'stepLimitMs', 'duplicateLimitMs', 'stepToLimit', 'duplicateFirstToLimit', 'simultaneousAllAnsweredMs',
      'telemetryStepMs', 'telemetryOffStepMs', 'telemetryToOff', 'telemetryHooksMicros', 'telemetryHooksOffMicros']) {
      const value = result[name];
      assert.ok(typeof value === 'number' && Number.isFinite(value) && value > 0, `${name} is a positive number, got ${String(value)}`);
    }
    assert.equal(result.duplicateToFloor, Math.max(result.duplicateFinishedToFloor as number, result.duplicateHeldToFloor as number));
    assert.equal(typeof result.targetsMet, 'boolean');
    assert.equal(result.telemetryHooksReachApi, true, 'the telemetry row compared a Locker whose hooks reach the API with one whose hooks are off');
    assert.equal(typeof result.heapGrowthBytes, 'number');
    assert.equal(result.leakSteps, 64);
    assert.equal(typeof result.limitTargetsMet, 'boolean');
    assert.ok(table.includes('Against the physical limit'), 'the table shows the ratios to the limit');

    // Simultaneous deliveries of one step: the handler runs once per round, every copy is answered.
    assert.equal(result.simultaneousDeliveries, 20);
    assert.equal(result.simultaneousRounds, 2);
    assert.equal(result.simultaneousRanOnce, true, `the handler ran once per round: ${String(result.simultaneousRanOnceRounds)} of 2`);
    const statuses = result.simultaneousStatuses as Record<string, number>;
    assert.equal(Object.values(statuses).reduce((a, b) => a + b, 0), 40, 'every copy was answered');
    assert.ok(typeof result.simultaneousRpcs === 'number' && result.simultaneousRpcs >= 3, `a round costs at least a step's RPCs, got ${String(result.simultaneousRpcs)}`);

    // What is counted, not timed: a step is one read and two compare-and-swap commits; the first
    // duplicate of a step is answered from one lookup, a repeated one from memory (at most the first lookup).
    assert.equal(result.rpcsPerStep, 3, `a step sends a lookup and two commits, got ${String(result.rpcsPerStep)} RPCs`);
    assert.equal(result.rpcsPerFirstDuplicate, 1);
    // At concurrency 16 the steps carry a ledger record: two commits each, and their removals grouped.
    for (const name of ['limitOpsPerSec16', 'throughput16ToLimit', 'limitRecordOpsPerSec16', 'limitRecordCpuMicros16', 'throughput16ToLimitWithRecord', 'limitWithRecordToLimit16']) {
      assert.ok(typeof result[name] === 'number' && Number.isFinite(result[name]) && result[name] > 0, `${name} is a positive number, got ${String(result[name])}`);
    }
    const commits = result.commitsPerStep16 as number;
    assert.ok(commits > 2 && commits <= 3, `a step at concurrency 16 sends its two commits and a share of a removal's, got ${String(commits)}`);
    // Its task names its chain, so its first lookup reads its record too, and the removal deletes at the version read: nothing more is read.
    assert.equal(result.lookupsPerStep16, 1, `a step at concurrency 16 sends one lookup, its removal none, got ${String(result.lookupsPerStep16)}`);
    assert.equal(typeof result.throughputTargetsMet, 'boolean');
    // The limit whose lookup reads the record too is shown beside it, its ratio derived from the same medians.
    assert.ok(table.includes('limit, its lookup with the record'), 'the table shows the limit with the record read');
    assert.ok(Math.abs((result.throughput16ToLimit as number) / (result.limitWithRecordToLimit16 as number) - (result.throughput16ToLimitWithRecord as number)) < 0.02,
      'steps ÷ the limit with its record = (steps ÷ the limit) ÷ (the limit with its record ÷ the limit)');
    assert.ok((result.rpcsPerDuplicate as number) < 1, `repeated duplicates are answered from memory, got ${String(result.rpcsPerDuplicate)} RPCs`);

    // The same on the Firestore emulator (locking reads; baseVersion ignored), with a store built with no options: one run.
    assert.ok(table.includes('simultaneous deliveries of one step on the Firestore emulator'), 'the table shows the stampede on the Firestore emulator');
    const stampedes = result.stampedes as Array<Record<string, unknown>>;
    assert.deepEqual(stampedes.map((x) => [x.emulator, x.runs]), [['Firestore emulator', 1]]);

    // Kickoffs of new chains: the schedule() loop, scheduleMany() and the raw batched upsert, with RPCs counted.
    assert.ok(table.includes('Kickoffs of 50 new chains'), 'the table shows the kickoff part');
    for (const row of ['raw batched upsert (500 mutations)', 'schedule() loop at concurrency 16', 'scheduleMany()']) assert.ok(table.includes(row), `the table shows "${row}"`);
    assert.equal(result.kickoffChains, 50);
    for (const name of ['kickoffFloorPerSec', 'kickoffLoopPerSec', 'kickoffBulkPerSec', 'kickoffBulkToLoop', 'kickoffBulkToFloor']) {
      const value = result[name];
      assert.ok(typeof value === 'number' && Number.isFinite(value) && value > 0, `${name} is a positive number, got ${String(value)}`);
    }
    assert.equal(typeof result.kickoffTargetsMet, 'boolean');
    assert.equal(result.kickoffLoopRpcsPer1000, 2_000, 'a kickoff through schedule() is a lookup and a commit');
    // 50 chains in one batch: two lookups and two commits (ledger records; entities with their
    // kickoff records; the records looked up again), and the call's own kickoff record, read and
    // written when it begins and again when it ends (a lookup and a commit each): 8 RPCs for 50.
    assert.equal(result.kickoffBulkRpcsPer1000, 160, 'a batch of 50: 4 RPCs, and 4 for the call\'s kickoff record');

    // The status page's overview at two sizes, in memory and on both emulators: store calls and render time.
    assert.ok(table.includes('The status page\'s overview (GET /)'), 'the table shows the console part');
    const rows = result.console as Array<{ store: string; chains: number; calls: number; renderMs: number; keysOnlyMs: number; ratio: number }>;
    assert.deepEqual(rows.map((r) => [r.store, r.chains]), [400, 800].flatMap((n) => [['in-memory store', n], ['Firestore emulator (Datastore mode)', n], ['legacy Datastore emulator', n]]));
    for (const r of rows) assert.ok(r.calls > 0 && r.renderMs > 0 && r.keysOnlyMs > 0 && r.ratio > 0, JSON.stringify(r));

    // A fan-out against scheduleMany() of as many chains, run to its join, with RPCs and writes counted.
    assert.ok(table.includes('Fan-out of 30 children'), 'the table shows the fan-out part');
    assert.equal(result.fanOutChildren, 30);
    for (const name of ['fanOutChildrenPerSec', 'fanOutBulkPerSec', 'fanOutToBulk', 'fanOutPlainRpcsPerChain', 'fanOutRpcsPerChild', 'fanOutMaxWritesPerEntitySecond', 'fanOutParentWrites', 'fanOutHeaderWrites']) {
      const value = result[name];
      assert.ok(typeof value === 'number' && Number.isFinite(value) && value > 0, `${name} is a positive number, got ${String(value)}`);
    }
    assert.ok(typeof result.fanOutSettleToJoinMs === 'number' && Number.isFinite(result.fanOutSettleToJoinMs), `fanOutSettleToJoinMs is a number, got ${String(result.fanOutSettleToJoinMs)}`);
    assert.equal(typeof result.fanOutExtraRpcsPerChild, 'number');
    assert.equal(typeof result.fanOutHottestEntity, 'string');
    assert.ok(typeof result.fanOutMaxWritesPerSharedEntitySecond === 'number' && result.fanOutMaxWritesPerSharedEntitySecond >= 1, 'a page\'s done mark (at least) was written while the children settled');
    assert.match(String(result.fanOutHottestSharedEntity), /^(BenchParent|LockerFanOut)/, 'the hottest shared entity is the parent or a fan-out record');
    // The parent's writes listed with their locks: scheduled, its lease taken, step 1 finished (waiting for the join), the join taken, finished.
    const parentLine = table.split('\n').find((line) => line.includes("the parent's writes, ms from the first child settling"));
    assert.ok(parentLine, "the table lists the parent's writes");
    const locks = [...parentLine.matchAll(/-?\d+ ms ([^\s,]+)/g)].map((m) => m[1]);
    assert.equal(locks.length, result.fanOutParentWrites, 'one entry per write of the parent');
    assert.deepEqual(locks, ['1/scheduled/free', '1/scheduled/held', '2/scheduled/free', '2/scheduled/held', '3/complete/free']);
    assert.equal(result.fanOutJoinSawAll, true, 'the join saw every child succeeded');
    assert.equal(typeof result.fanOutTargetMet, 'boolean');
    assert.ok((result.fanOutRpcsPerChild as number) > (result.fanOutPlainRpcsPerChain as number), 'a child costs more than a plain chain (its record, the seal, the check)');

    // Recurring work: 200 schedules all due at one tick, against scheduleMany() of 200 chains, store calls counted.
    assert.ok(table.includes('Recurring work: 200 schedules all due at one tick'), 'the table shows the recurring part');
    for (const row of ['scheduleMany() of 200 new chains', 'the tick at which all 200 are due', 'the first tick (writes 200 declarations)']) assert.ok(table.includes(row), `the table shows "${row}"`);
    assert.equal(result.recurringSchedules, 200);
    assert.equal(result.recurringTickStarted, 200, 'the due tick started every schedule\'s run');
    for (const name of ['recurringTickMs', 'recurringBulkMs', 'recurringTickToBulk', 'recurringTickCallsPerSchedule', 'recurringTickRpcsPerSchedule', 'recurringDeclareMs', 'recurringDeclareToBulk']) {
      const value = result[name];
      assert.ok(typeof value === 'number' && Number.isFinite(value) && value > 0, `${name} is a positive number, got ${String(value)}`);
    }
    // The due tick: the declarations in one lookup (none written), the due keys in two queries (the
    // page, then none left), the due records in one lookup, planned and settled in transactions of
    // 20 (10 each), and the runs started by one scheduleMany() of 200 (2 lookups, 2 conditional
    // writes, 2 transactions: what the bulk row costs).
    assert.deepEqual(result.recurringTickCalls, { findKeys: 2, readMany: 4, replaceMany: 2, transaction: 22 });
    assert.equal(result.recurringBulkCallsPerChain, 0.03, 'scheduleMany() of 200: 6 store calls');
    assert.equal(result.recurringTickCallsPerSchedule, 0.15, 'the tick: 30 store calls for 200 schedules');

    const leaks = result.leaks as Array<Record<string, unknown>>;
    assert.deepEqual(leaks.map((l) => l.store), ['legacy Datastore emulator', 'in-memory store']);
    for (const leak of leaks) {
      assert.equal(leak.steps, 64);
      assert.equal(leak.libraryTimersLeftAlive, 0, `no timer of the library outlives its step on the ${String(leak.store)}`);
    }
  });
});

/**
 * How much the benchmark measures. `BENCH_QUICK=1` makes a short run; single sizes can be
 * overridden (`BENCH_JVM_WARMUP`, `BENCH_ROUNDS`, `BENCH_WARMUP`, `BENCH_BATCHES`, `BENCH_BATCH_OPS`, `BENCH_LEAK_STEPS`,
 * `BENCH_SIMULTANEOUS_ROUNDS`, `BENCH_KICKOFF_CHAINS`, `BENCH_KICKOFF_ROUNDS`, `BENCH_FANOUT_CHILDREN`, `BENCH_RECURRING_SCHEDULES`;
 * `BENCH_ONLY=kickoff`, `fanout`, `console`, `recurring` or `native` runs that part alone),
 * which the smoke test uses for a tiny round. `BENCH_NATIVE=0` leaves the last part (a step
 * against its limit on each emulator, which starts the Native-mode emulator's JVM) out of a full run.
 */

/** The sizes of one benchmark run. */
export interface Settings {
  /** Interleaved latency rounds (each: one floor, one step, one duplicate of each kind). */
  rounds: number;
  /** Raw transactions and steps (each) run at concurrency 16 before anything else, to warm the emulator's JVM. */
  jvmWarmup: number;
  /** Rounds run first and thrown away. */
  warmup: number;
  /** Alternating throughput batches of each kind at concurrency 16. */
  batches: number;
  /** Operations per worker in one throughput batch. */
  batchOps: number;
  /** Concurrency of the throughput part. */
  concurrency: number;
  /** Steps of the memory and timer check. */
  leakSteps: number;
  /** Steps run before the memory baseline, so caches and JIT settle first. */
  leakWarmup: number;
  /** Copies of one task sent at once, and rounds of that. */
  simultaneous: number;
  simultaneousRounds: number;
  /** New chains per kickoff round, and interleaved rounds of the loop, the bulk call and the floor. */
  kickoffChains: number;
  kickoffRounds: number;
  /** Children of the fan-out part (and plain chains it compares them with). */
  fanOutChildren: number;
  /** Schedules all due at one tick (`bench/recurring.ts`). */
  recurringSchedules: number;
  /** Chains the status page's overview is measured over (`bench/console.ts`). */
  consoleSizes: readonly number[];
  /** `BENCH_ONLY=kickoff` (`npm run bench:kickoff`), `fanout` (`npm run bench:fanout`), `console` (`npm run bench:console`), `recurring` (`npm run bench:recurring`) or `native` (`npm run bench:native`: a step against its limit on each emulator, Native mode included) runs that part alone. */
  only: 'kickoff' | 'fanout' | 'console' | 'recurring' | 'native' | undefined;
  /** Whether a full run ends with that part (`BENCH_NATIVE=0`: not; the smoke test leaves it to its own long test). */
  native: boolean;
  quick: boolean;
}

const FULL: Settings = { jvmWarmup: 5_000, rounds: 1000, warmup: 200, batches: 10, batchOps: 40, concurrency: 16, leakSteps: 10_000, leakWarmup: 1_000, simultaneous: 20, simultaneousRounds: 20, kickoffChains: 1_000, kickoffRounds: 5, fanOutChildren: 10_000, recurringSchedules: 10_000, consoleSizes: [10_000, 100_000], only: undefined, native: true, quick: false };
const QUICK: Settings = { jvmWarmup: 2_000, rounds: 200, warmup: 40, batches: 4, batchOps: 20, concurrency: 16, leakSteps: 1_000, leakWarmup: 200, simultaneous: 20, simultaneousRounds: 10, kickoffChains: 1_000, kickoffRounds: 3, fanOutChildren: 200, recurringSchedules: 1_000, consoleSizes: [1_000, 10_000], only: undefined, native: true, quick: true };

/** The settings for this run, from the environment. */
export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const base = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true' ? QUICK : FULL;
  return {
    ...base,
    jvmWarmup: count(env, 'BENCH_JVM_WARMUP', base.jvmWarmup, 0),
    rounds: count(env, 'BENCH_ROUNDS', base.rounds),
    warmup: count(env, 'BENCH_WARMUP', base.warmup, 0),
    batches: count(env, 'BENCH_BATCHES', base.batches),
    batchOps: count(env, 'BENCH_BATCH_OPS', base.batchOps),
    leakSteps: count(env, 'BENCH_LEAK_STEPS', base.leakSteps),
    leakWarmup: count(env, 'BENCH_LEAK_WARMUP', base.leakWarmup, 0),
    simultaneousRounds: count(env, 'BENCH_SIMULTANEOUS_ROUNDS', base.simultaneousRounds),
    kickoffChains: count(env, 'BENCH_KICKOFF_CHAINS', base.kickoffChains),
    kickoffRounds: count(env, 'BENCH_KICKOFF_ROUNDS', base.kickoffRounds),
    fanOutChildren: count(env, 'BENCH_FANOUT_CHILDREN', base.fanOutChildren),
    recurringSchedules: count(env, 'BENCH_RECURRING_SCHEDULES', base.recurringSchedules),
    consoleSizes: sizes(env, 'BENCH_CONSOLE_SIZES', base.consoleSizes),
    only: only(env.BENCH_ONLY),
    native: flag(env, 'BENCH_NATIVE', base.native),
  };
}

function only(raw: string | undefined): 'kickoff' | 'fanout' | 'console' | 'recurring' | 'native' | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'kickoff' || raw === 'fanout' || raw === 'console' || raw === 'recurring' || raw === 'native') return raw;
  throw new Error(`BENCH_ONLY must be kickoff, fanout, console, recurring or native (or unset for the whole benchmark); got ${JSON.stringify(raw)}`);
}

/** A comma-separated list of chain counts (each at least 400: the part reads 300 keys of one state). */
function sizes(env: NodeJS.ProcessEnv, name: string, fallback: readonly number[]): readonly number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map(Number);
  if (values.some((v) => !Number.isSafeInteger(v) || v < 400)) throw new Error(`${name} must list whole numbers of at least 400, comma-separated; got ${JSON.stringify(raw)}`);
  return values;
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '1' || raw === 'true') return true;
  if (raw === '0' || raw === 'false') return false;
  throw new Error(`${name} must be 1 or 0; got ${JSON.stringify(raw)}`);
}

function count(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be a whole number of at least ${min}; got ${JSON.stringify(raw)}`);
  return value;
}

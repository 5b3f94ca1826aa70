/**
 * The chaos run's settings: every default in one frozen literal, the parse of `--name value`
 * command-line flags (kebab-case of the field names, e.g. `--dup-rate 0.3 --seed 7`; a switch such
 * as `--sigterm` takes `on` or `off`, or nothing for on), and the one-line help of every flag.
 */
import { freshSeed } from './random';

/** Which emulator the workers share. */
export type EmulatorName = 'datastore' | 'firestore' | 'firestoreNative';

const EMULATORS: readonly EmulatorName[] = ['datastore', 'firestore', 'firestoreNative'];

/** Everything a run is told. Rates are probabilities in [0, 1]; times are ms. */
export interface ChaosOptions {
  /** Seed of every fault decision and schedule. */
  seed: number;
  /** Chains to run (C). */
  chains: number;
  /** Steps per chain (S). */
  steps: number;
  /** Worker processes (K). */
  workers: number;
  /** Chains kicked off per burst. */
  burst: number;
  /** Time between two bursts of kickoffs. */
  burstEveryMs: number;
  /** The Locker's leaseDuration on every worker. */
  leaseMs: number;
  /** The Locker's maxRetries on every worker. */
  maxRetries: number;
  /** Share of tasks delivered one extra time. */
  dupRate: number;
  /** Share of deliveries held back by up to `lateMaxMs` (reordering). */
  lateRate: number;
  lateMaxMs: number;
  /** Share of step runs whose handler throws before its side effect. */
  throwRate: number;
  /** Share of step runs whose handler fails for good (throws PermanentError) before its side effect. */
  permanentRate: number;
  /** Share of step runs whose handler, after its side effect, blocks its process's event loop for `hangMs`. */
  hangRate: number;
  /** How long a hang lasts; defaults to 1.5 × leaseMs. */
  hangMs: number;
  /** A worker is SIGKILLed (and restarted) every this many ms; 0 for never. */
  killEveryMs: number;
  /** A store fault (connection resets or a delay window) every this many ms; 0 for never. */
  storeFaultEveryMs: number;
  /** Length of the one store outage of the run (every connection refused); 0 for none. */
  outageMs: number;
  /** Clock skew of each worker: up to ± this fraction of leaseMs. */
  skewFraction: number;
  /** Share of created tasks the dispatcher accepts and then loses. */
  lossRate: number;
  /** Share of create-task calls that fail (half before the task exists, half after). */
  createFailRate: number;
  /** Deliveries of a task before the dispatcher drops it (Cloud Tasks' maxAttempts). */
  maxAttempts: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  /** How long the dispatcher waits for an answer before it counts the delivery as failed. */
  dispatchDeadlineMs: number;
  /** Deliveries in flight at once. */
  concurrency: number;
  /** Workers run locker.sweep() this often. */
  sweepEveryMs: number;
  /** The Locker's `stallAfter` on every worker (raised to leaseMs if shorter): how long a step may stall before the sweep re-delivers it. */
  stallAfterMs: number;
  /** The fault phase ends at the latest after this long (then the run settles without faults). */
  maxFaultMs: number;
  /** Faults off, how long the run waits with no chain moving before it judges (chains still moving are waited for). */
  settleMs: number;
  /** Chains settled, the sweep runs on (every `sweepEveryMs`) until no effect or alert arrived for this long, so alerts left to the sweep are sent before the judgement. */
  alertSettleMs: number;
  /** The emulator the workers share. */
  emulator: EmulatorName;
  /** Share of step runs whose handler works for `slowMs` (± 50 %) before its side effect; half of them stop when `ctx.signal` fires, half run on. */
  slowRate: number;
  slowMs: number;
  /** How long the alerter takes to accept an alert before it records it (a mail server's answer). */
  alertMs: number;
  /** The Locker's `alertTimeout` on every worker (0: the library's default); alerts not marked sent are sent again by the sweep some multiple of it later. */
  alertTimeoutMs: number;
  /**
   * Cloud Run's request-time CPU: a worker gets no CPU while no request is in flight to it. The
   * orchestrator SIGSTOPs it right after its last request was answered (or given up at the dispatch
   * deadline) and SIGCONTs it when the next one is sent. Sweeps then come as requests (`POST
   * /sweep` every `sweepEveryMs`, as Cloud Scheduler sends them), not from a timer in the worker.
   */
  freezeIdle: boolean;
  /** With `freezeIdle`: a worker idle this long is scaled in (stopped as `sigterm` says) and a fresh one started; 0 for never. */
  scaleInAfterMs: number;
  /** Every stop of a worker (the kills, scale-in, the end of the run) is SIGTERM, `graceMs`, then SIGKILL if it still runs, instead of a bare SIGKILL. */
  sigterm: boolean;
  /** With `sigterm`: how long a worker may drain after SIGTERM before it is SIGKILLed (Cloud Run: 10 s). */
  graceMs: number;
  /** Share of the chains that fan out at one of their steps (see chaos/fan-out-plan.ts). */
  fanOutShare: number;
  /** Children of each fan-out (the first of about a third of them nests a fan-out of its own). */
  fanOutChildren: number;
  /** Share of the children that fail for good by design (at one of their steps, whatever the faults). */
  fanOutChildFailRate: number;
}

/** The switches among the options (on or off), told apart from the numbers when flags are parsed. */
const SWITCHES: ReadonlySet<string> = new Set(['freezeIdle', 'sigterm']);

/** The defaults of `npm run chaos`. */
export const CHAOS_DEFAULTS: Readonly<Omit<ChaosOptions, 'seed' | 'hangMs'>> = Object.freeze({
  chains: 1_000,
  steps: 10,
  workers: 3,
  burst: 100,
  burstEveryMs: 2_000,
  leaseMs: 5_000,
  maxRetries: 10,
  dupRate: 0.3,
  lateRate: 0.1,
  lateMaxMs: 3_000,
  throwRate: 0.05,
  permanentRate: 0.002,
  hangRate: 0.01,
  killEveryMs: 10_000,
  storeFaultEveryMs: 5_000,
  outageMs: 3_000,
  skewFraction: 0.2,
  lossRate: 0.01,
  createFailRate: 0.01,
  maxAttempts: 30,
  minBackoffMs: 100,
  maxBackoffMs: 3_000,
  dispatchDeadlineMs: 15_000,
  concurrency: 32,
  sweepEveryMs: 5_000,
  stallAfterMs: 5_000,
  maxFaultMs: 600_000,
  settleMs: 45_000,
  alertSettleMs: 20_000,
  emulator: 'datastore' as EmulatorName,
  slowRate: 0.02,
  slowMs: 8_000,
  alertMs: 300,
  alertTimeoutMs: 0,
  freezeIdle: false,
  scaleInAfterMs: 10_000,
  sigterm: false,
  graceMs: 10_000,
  fanOutShare: 0.1,
  fanOutChildren: 3,
  fanOutChildFailRate: 0.25,
});

/** One line per flag, for `--help`. */
export const CHAOS_HELP: Readonly<Record<keyof ChaosOptions, string>> = Object.freeze({
  seed: 'seed of every fault decision and schedule (default: a fresh one, printed)',
  chains: 'chains to run',
  steps: 'steps per chain',
  workers: 'worker processes',
  burst: 'chains kicked off per burst',
  burstEveryMs: 'time between two bursts of kickoffs',
  leaseMs: "the Locker's leaseDuration on every worker",
  maxRetries: "the Locker's maxRetries on every worker",
  dupRate: 'share of tasks delivered one extra time',
  lateRate: 'share of deliveries held back by up to --late-max-ms (reordering)',
  lateMaxMs: 'how long a late delivery is held back at most',
  throwRate: 'share of step runs whose handler throws before its side effect',
  permanentRate: 'share of step runs whose handler throws PermanentError before its side effect',
  hangRate: "share of step runs whose handler blocks its process's event loop after its side effect",
  hangMs: 'how long a hang lasts (default 1.5 × --lease-ms)',
  killEveryMs: 'a worker is stopped (SIGKILL, or as --sigterm says) and restarted this often; 0 for never',
  storeFaultEveryMs: 'a store fault (connection resets or a delay window) this often; 0 for never',
  outageMs: 'length of the one store outage of the run; 0 for none',
  skewFraction: "clock skew of each worker: up to ± this fraction of --lease-ms",
  lossRate: 'share of created tasks the dispatcher accepts and then loses',
  createFailRate: 'share of create-task calls that fail (half before the task exists, half after)',
  maxAttempts: "deliveries of a task before the dispatcher drops it (Cloud Tasks' maxAttempts)",
  minBackoffMs: 'first retry backoff of a delivery',
  maxBackoffMs: 'longest retry backoff of a delivery',
  dispatchDeadlineMs: 'how long the dispatcher waits for an answer before it counts the delivery as failed',
  concurrency: 'deliveries in flight at once',
  sweepEveryMs: 'the sweep runs this often (a timer in each worker; with --freeze-idle, POST /sweep from the orchestrator)',
  stallAfterMs: "the Locker's stallAfter on every worker (raised to --lease-ms if shorter)",
  maxFaultMs: 'the fault phase ends at the latest after this long',
  settleMs: 'faults off, how long the run waits with no chain moving before it judges',
  alertSettleMs: 'chains settled, the sweep runs on until no effect or alert arrived for this long',
  emulator: 'datastore (the legacy emulator), firestore (Datastore mode) or firestoreNative (Native mode: FirestoreStore)',
  slowRate: 'share of step runs whose handler works for --slow-ms (± 50 %) before its side effect; half stop on ctx.signal, half run on',
  slowMs: 'how long a slow handler works, on average',
  alertMs: 'how long the alerter takes to accept an alert (a mail server)',
  alertTimeoutMs: "the Locker's alertTimeout on every worker; 0: the library's default",
  freezeIdle: "on: Cloud Run's request-time CPU: SIGSTOP a worker after its last answer, SIGCONT on its next request, sweeps as requests, scale-in",
  scaleInAfterMs: 'with --freeze-idle: a worker idle this long is stopped and a fresh one started; 0 for never',
  sigterm: 'on: every stop of a worker is SIGTERM, --grace-ms, then SIGKILL (the worker drains with locker.shutdown())',
  graceMs: 'with --sigterm: the time between SIGTERM and SIGKILL',
  fanOutShare: 'share of the chains that fan out at one of their steps (children, a policy, a join; some nested)',
  fanOutChildren: 'children of each fan-out',
  fanOutChildFailRate: 'share of the children that fail for good by design',
});

/** Fills the defaults and checks every value; throws with a sentence saying what is wrong. */
export function chaosOptions(given: Partial<ChaosOptions> = {}): ChaosOptions {
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<ChaosOptions>;
  const merged = { ...CHAOS_DEFAULTS, seed: freshSeed(), ...defined };
  const options: ChaosOptions = { ...merged, hangMs: defined.hangMs ?? Math.round(1.5 * merged.leaseMs) };
  for (const [name, value] of Object.entries(options)) {
    if (name === 'emulator') continue;
    if (SWITCHES.has(name)) {
      if (typeof value !== 'boolean') throw new Error(`--${kebab(name)} is a switch: on or off; got ${String(value)}`);
      continue;
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`--${kebab(name)} must be a number ≥ 0; got ${String(value)}`);
    if ((name.endsWith('Rate') || name === 'fanOutShare') && value > 1) throw new Error(`--${kebab(name)} is a probability: at most 1; got ${value}`);
  }
  for (const name of ['chains', 'steps', 'workers', 'burst', 'leaseMs', 'maxRetries', 'maxAttempts', 'concurrency', 'sweepEveryMs', 'stallAfterMs'] as const) {
    if (options[name] < 1) throw new Error(`--${kebab(name)} must be at least 1`);
  }
  if (!EMULATORS.includes(options.emulator)) throw new Error(`--emulator must be ${EMULATORS.join(', ')}; got ${String(options.emulator)}`);
  return options;
}

/**
 * Parses `--kebab-name value` pairs (numbers, the emulator's name, or `on`/`off` for a switch; a
 * switch followed by another flag, or last, is on).
 */
export function parseFlags(argv: readonly string[]): Partial<ChaosOptions> {
  const out: Record<string, number | string | boolean> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const name = flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (flag.startsWith('--') && SWITCHES.has(name) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) {
      out[name] = true;
      i--;
      continue;
    }
    const value = argv[i + 1];
    if (!flag.startsWith('--') || value === undefined) throw new Error(`expected --name value pairs; got ${JSON.stringify(argv.slice(i).join(' '))}`);
    if (!(name in CHAOS_HELP)) throw new Error(`unknown flag ${flag} (--help lists them)`);
    out[name] = name === 'emulator' ? value : SWITCHES.has(name) ? onOff(flag, value) : Number(value);
  }
  return out as Partial<ChaosOptions>;
}

/** The text of `--help`: how to call, then every flag with its default. */
export function helpText(): string {
  const defaults: Record<string, unknown> = { ...CHAOS_DEFAULTS };
  const rows = (Object.keys(CHAOS_HELP) as (keyof ChaosOptions)[]).map((name) => {
    const value = defaults[name];
    const shown = value === undefined ? '' : typeof value === 'boolean' ? ` (default ${value ? 'on' : 'off'})` : ` (default ${String(value)})`;
    return `  --${kebab(name).padEnd(22)} ${CHAOS_HELP[name]}${shown}`;
  });
  return [
    'npm run chaos [-- --name value ...]',
    'Runs chains of steps over worker processes under faults and judges them with an oracle; prints a',
    'table and one JSON line last; exits 0 when every invariant held, 1 when one broke, 2 on a bad flag.',
    'The platform (Cloud Run): --freeze-idle --sigterm (see docs/concepts/chaos-on-the-platform.md).',
    '',
    ...rows,
  ].join('\n');
}

function onOff(flag: string, value: string): boolean {
  if (['on', 'true', '1', 'yes'].includes(value)) return true;
  if (['off', 'false', '0', 'no'].includes(value)) return false;
  throw new Error(`${flag} is a switch: on or off; got ${JSON.stringify(value)}`);
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

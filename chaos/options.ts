/**
 * The chaos run's settings: every default in one frozen literal, and the parse of `--name value`
 * command-line flags (kebab-case of the field names, e.g. `--dup-rate 0.3 --seed 7`).
 */
import { freshSeed } from './random';

/** Which emulator the workers share. */
export type EmulatorName = 'datastore' | 'firestore';

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
  /** The emulator the workers share. */
  emulator: EmulatorName;
}

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
  emulator: 'datastore' as EmulatorName,
});

/** Fills the defaults and checks every value; throws with a sentence saying what is wrong. */
export function chaosOptions(given: Partial<ChaosOptions> = {}): ChaosOptions {
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<ChaosOptions>;
  const merged = { ...CHAOS_DEFAULTS, seed: freshSeed(), ...defined };
  const options: ChaosOptions = { ...merged, hangMs: defined.hangMs ?? Math.round(1.5 * merged.leaseMs) };
  for (const [name, value] of Object.entries(options)) {
    if (name === 'emulator') continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`--${kebab(name)} must be a number ≥ 0; got ${String(value)}`);
    if (name.endsWith('Rate') && value > 1) throw new Error(`--${kebab(name)} is a probability: at most 1; got ${value}`);
  }
  for (const name of ['chains', 'steps', 'workers', 'burst', 'leaseMs', 'maxRetries', 'maxAttempts', 'concurrency', 'sweepEveryMs', 'stallAfterMs'] as const) {
    if (options[name] < 1) throw new Error(`--${kebab(name)} must be at least 1`);
  }
  if (options.emulator !== 'datastore' && options.emulator !== 'firestore') throw new Error(`--emulator must be datastore or firestore; got ${String(options.emulator)}`);
  return options;
}

/** Parses `--kebab-name value` pairs (numbers, or the emulator's name). */
export function parseFlags(argv: readonly string[]): Partial<ChaosOptions> {
  const out: Record<string, number | string> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const value = argv[i + 1];
    if (!flag.startsWith('--') || value === undefined) throw new Error(`expected --name value pairs; got ${JSON.stringify(argv.slice(i).join(' '))}`);
    const name = flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (!(name in CHAOS_DEFAULTS) && name !== 'seed' && name !== 'hangMs') throw new Error(`unknown flag ${flag}`);
    out[name] = name === 'emulator' ? value : Number(value);
  }
  return out as Partial<ChaosOptions>;
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

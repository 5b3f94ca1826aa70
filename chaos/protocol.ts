/**
 * What the orchestrator and its worker processes tell each other, and the records the oracle
 * reads: effects, handler runs and alerts, one JSON line each, in files of their own per worker.
 */
import { join } from 'node:path';
import type { EmulatorName } from './options';

/** Everything a worker process is told, in the `CHAOS_WORKER` environment variable. */
export interface WorkerConfig {
  /** The worker's slot (0..K-1); a restarted worker keeps its slot. */
  slot: number;
  /** How many times this slot was started before (0 for the first). */
  incarnation: number;
  seed: number;
  projectId: string;
  /** host:port of the store: the fault proxy in front of the emulator. */
  storeHost: string;
  emulator: EmulatorName;
  dispatcherUrl: string;
  secret: string;
  leaseMs: number;
  maxRetries: number;
  throwRate: number;
  permanentRate: number;
  hangRate: number;
  hangMs: number;
  slowRate: number;
  slowMs: number;
  /** How long the alerter takes before it records an alert. */
  alertMs: number;
  /** The Locker's alertTimeout; 0 for its default. */
  alertTimeoutMs: number;
  /** No sweep timer in the worker: sweeps come as `POST /sweep` (a frozen worker's timers do not run). */
  freezeIdle: boolean;
  /** Added to Date.now() in the Locker's clock. */
  skewMs: number;
  sweepEveryMs: number;
  stallAfterMs: number;
  steps: number;
  /** The folder of the effect, alert and log files. */
  dir: string;
  /** Handler faults off from the start (a worker restarted after the faults stopped). */
  calm: boolean;
  /** The fan-outs' plan is drawn from these (chaos/fan-out-plan.ts), with the chains' names. */
  chains: number;
  fanOutShare: number;
  fanOutChildren: number;
  fanOutChildFailRate: number;
}

/** Worker → orchestrator. */
export type WorkerMessage = { type: 'ready'; port: number };

/** Orchestrator → worker. */
export type OrchestratorMessage = { type: 'calm' };

/** A handler's side effect, recorded (and flushed) before the handler returns. */
export interface EffectRecord {
  /** The chain entity's key name. */
  key: string;
  seq: number;
  /** The attempt id the library handed the handler. */
  attempt: string;
  /** The dispatcher's retry count of the delivery. */
  retry: number;
  slot: number;
  incarnation: number;
  /** Real time (no skew), epoch ms. */
  t: number;
  /** A join step's effect: what `ctx.fanIn()` showed it. */
  join?: JoinSeen;
}

/** What a join saw of its fan-out, every page of children read. */
export interface JoinSeen {
  id: string;
  outcome: string;
  /** `fanIn.counts`: children per state, and the total. */
  counts: Record<string, number>;
  children: SeenChild[];
}

/** One child as the join read it. */
export interface SeenChild {
  /** The child entity's key name. */
  name: string;
  state: string;
  /** Its result (JSON), if it set one. */
  result?: unknown;
  /** Whether an error text came with it. */
  error: boolean;
}

/** The key names of a run's chains (the top-level ones: c00000, c00001, ...). */
export function chainNames(chains: number): string[] {
  return Array.from({ length: chains }, (_, i) => `c${String(i).padStart(5, '0')}`);
}

/**
 * One end of a handler run, recorded (and flushed) by the handler itself: `entered` first thing,
 * `left` last, just before it returns or rejects. An attempt that entered and never left was cut
 * off (its process killed); one that left after another attempt of its step entered was running
 * while its lease was taken or handed back.
 */
export interface RunRecord {
  what: 'entered' | 'left';
  key: string;
  seq: number;
  attempt: string;
  /** How the handler ended (`left` only): it returned, threw (a PermanentError: `failed`), or rejected with `ctx.signal`'s reason (`aborted`). */
  outcome?: 'returned' | 'threw' | 'failed' | 'aborted';
  /** `left` only: `ctx.signal` had fired while it ran (the handler ran on, or stopped on it). */
  signalled?: boolean;
  slot: number;
  incarnation: number;
  /** Real time (no skew), epoch ms. */
  t: number;
}

/** An alert as the alerter received it. */
export interface AlertRecord {
  /** The alert's stable id (`AlertEvent.id`): the same alert sent twice has the same id. */
  id?: string;
  reason: string;
  key: string;
  seq: number;
  previousAttempt?: string;
  newAttempt?: string;
  slot: number;
  t: number;
}

export const effectsFile = (dir: string, slot: number): string => join(dir, `effects-${slot}.jsonl`);
export const runsFile = (dir: string, slot: number): string => join(dir, `runs-${slot}.jsonl`);
export const alertsFile = (dir: string, slot: number): string => join(dir, `alerts-${slot}.jsonl`);
export const logFile = (dir: string, slot: number): string => join(dir, `worker-${slot}.log`);

/** The header with which the dispatcher tells a worker, on each request, that the faults stopped (an IPC message waits while the worker is frozen). */
export const CALM_HEADER = 'x-chaos-calm';

/** The kind of the chain entities. */
export const CHAIN_KIND = 'ChaosChain';

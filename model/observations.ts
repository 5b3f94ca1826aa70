/**
 * What the model saw during a sequence, from outside the store: the runs and their effects, the
 * steps it saw committed, the lock of every entity after each operation (read from the store
 * itself), the Locker's own reports of failures and takeovers, what the alerters were given and
 * what reached a person, and every kickoff's answer. The oracle judges these.
 */
import type { AlertEvent } from '../src/types';

/** A step: the entity's name and the step's sequence number (unique per entity across its chains). */
export interface StepRef {
  entity: string;
  seq: number;
}

/** One run of the handler. */
export interface Run extends StepRef {
  attempt: string;
  /** The chain, as the task named it (`X-Lock-Chain`). */
  chain: string | undefined;
  /** `ctx.idempotencyKey`, where the context has one. */
  idempotencyKey: string | undefined;
}

/** A lock as the model read it from the store. */
export interface LockSeen {
  seq: number;
  state: string | undefined;
  alerts: string[];
}

/** Everything seen in one sequence. */
export interface Observations {
  /** The entities the sequence works on. */
  entities: string[];
  runs: Run[];
  /** Runs that did their effect (at most one effect per run). */
  effects: Run[];
  /** Steps the model saw committed: `schedule()`, `scheduleMany()` and `ctx.schedule()` answers. */
  committed: StepRef[];
  /** Steps an operator cancelled (`cancel()` answers). */
  cancelled: StepRef[];
  /** The Locker's `failed` events. */
  failed: StepRef[];
  /** The Locker's `overwritten` events: who lost the lease and who took it. */
  overwritten: Array<StepRef & { previous: string; attempt: string }>;
  /** Every distinct lock each entity was seen with, in order. */
  locks: Map<string, LockSeen[]>;
  /** Every alert the alerters were given. */
  given: AlertEvent[];
  /** The alerts that reached a person. */
  received: AlertEvent[];
  /** Every `scheduleMany()` answer, item by item. */
  kickoffs: Array<{ kickoffId: string; entity: string; status: string; resumed: boolean }>;
}

/** Empty observations of `entities`. */
export function emptyObservations(entities: string[]): Observations {
  return {
    entities, runs: [], effects: [], committed: [], cancelled: [], failed: [], overwritten: [],
    locks: new Map(entities.map((e) => [e, []])), given: [], received: [], kickoffs: [],
  };
}

/** `entity#seq`. */
export function stepName(s: StepRef): string {
  return `${s.entity}#${s.seq}`;
}

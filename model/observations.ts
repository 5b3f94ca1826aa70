/**
 * What the model saw during a sequence, from outside the store: the runs and their effects, the
 * steps it saw committed, the lock of every entity after each operation (read from the store
 * itself), the Locker's own reports of failures and takeovers, what the alerters were given and
 * what reached a person, and every kickoff's answer. The oracle judges these.
 */
import type { AlertEvent } from '../src/types';
import type { JoinShown } from './handler';
import type { PolicyName } from './fan-out-plan';
import { emptyRecurring, type RecurringSeen } from './recurring';

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
  /** The request as it arrived: its URL (path and query) and its body (the payload as JSON, '' for none). */
  url: string;
  body: string;
  /** How the run was scripted to end, and how its request was forged (undefined: a task as the Locker made it). */
  finish: string;
  forged: string | undefined;
  /** The operation it ran in. */
  op: number;
}

/** A task the Locker created, as the queue took it. */
export interface TaskSeen extends StepRef {
  chain: string | undefined;
  path: string;
  body: string;
}

/** A fanning step's fan-out, as the model saw it sealed. */
export interface FanOutSeen extends StepRef {
  chain: string | undefined;
  /** The fan-out's id (`fanOut()`'s answer). */
  id: string;
  /** The children the sealing attempt gave. */
  children: string[];
  /** Every child any attempt of the step gave. */
  given: string[];
  policy: PolicyName;
  /**
   * The earliest the seal can have been: the model's clock when the step's first fanning attempt
   * began. Not when `fanOut()` returned: an attempt that died just after the seal's write never
   * returned, and a later attempt, resuming, reports the seal long after it was written (so the
   * deadline, which runs from the seal, may pass sooner than that report says).
   */
  sealedAt: number;
  /** The operation it sealed in. */
  op: number;
}

/** A run on the join route, and what `ctx.fanIn()` showed it (undefined: no join). */
export interface JoinSeen extends StepRef {
  chain: string | undefined;
  attempt: string;
  url: string;
  forged: string | undefined;
  shown: JoinShown | undefined;
  /** The model's clock and the operation when it ran. */
  now: number;
  op: number;
}

/** A lock as the model read it from the store. */
export interface LockSeen {
  seq: number;
  chain: string | undefined;
  /** The operation after which it was read, and the model's clock then. */
  op: number;
  now: number;
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
  /** The Locker's `failed` events (the attempt that failed for good; '' for a sweep's). */
  failed: Array<StepRef & { attempt: string }>;
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
  /** Every task the instances created. */
  tasks: TaskSeen[];
  /** Every fan-out seen sealed, by fanning step. */
  fanOuts: FanOutSeen[];
  /** Every run on the join route. */
  joins: JoinSeen[];
  /** The sequence's `maxRetries`. */
  maxRetries: number;
  /** Recurring work: ticks, the operator's pause, resume and run-now, the schedules after quiet. */
  recurring: RecurringSeen;
}

/** Empty observations of `entities`. */
export function emptyObservations(entities: string[], maxRetries: number): Observations {
  return {
    entities, runs: [], effects: [], committed: [], cancelled: [], failed: [], overwritten: [],
    locks: new Map(entities.map((e) => [e, []])), given: [], received: [], kickoffs: [], tasks: [], fanOuts: [], joins: [], maxRetries, recurring: emptyRecurring(),
  };
}

/** `entity#seq`. */
export function stepName(s: StepRef): string {
  return `${s.entity}#${s.seq}`;
}

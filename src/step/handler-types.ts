/**
 * What a task handler is given, and how the user's typed entity is made from stored properties
 * and turned back into them.
 */
import type { Key } from '@google-cloud/datastore';
import type { Request } from 'express';
import type { OptionNames } from '../config/option-names';
import { LOCK_FIELD_PREFIX, type Json, type Properties, type TaskInfo } from '../types';
import type { FanIn, FanOutChild, FanOutOptions, FanOutStarted } from '../fanout/types';

/** Builds the user's typed entity from its stored properties (lock fields left out); `key` is the store's key type (`K`). */
export type EntityFactory<E, K = Key> = (properties: Properties, key: K) => E;

/** Options of a scheduled step. */
export interface ScheduleOptions {
  /** Run the step this many ms from now. */
  delayMs?: number;
  /** Run the step at this time (at most 30 days ahead, as Cloud Tasks allows). */
  at?: Date;
}

/** Every option name of {@link ScheduleOptions}. */
export const SCHEDULE_OPTION_NAMES: OptionNames<ScheduleOptions> = { delayMs: true, at: true };

/** The step that was scheduled. */
export interface ScheduledStep {
  /** The sequence number of the step scheduled. */
  seq: number;
  /** The task's name. */
  task: string;
  /** Whether the task was created at once; if not, `sweep()` sends it later. */
  sent: boolean;
}

/** Everything a handler needs to run one step; `K` is the store's key type (`Key`, or `DocumentReference` on `FirestoreStore`). */
export interface TaskContext<E, P = Json | undefined, K = Key> {
  /** The entity's key. */
  readonly key: K;
  /** The user's entity, typed by the factory. Changes to it are saved when the step finishes. */
  readonly entity: E;
  /** The step's sequence number: use it to fence your own downstream writes. */
  readonly seq: number;
  /** The task's JSON body (undefined when empty). */
  readonly payload: P;
  /** This attempt's id (the value of `lock_req` while it holds the lease). */
  readonly attempt: string;
  /** Cloud Tasks' metadata about this delivery. */
  readonly task: TaskInfo;
  /**
   * Aborts when the lease is lost, `leaseTimeout` passes, the request nears its time limit or the
   * Locker shuts down. Pass it only to the calls before the step's effect: a call that carries the
   * effect (a charge, an email) must not be cut half-way. To stop before the effect, reject with
   * `signal.reason` itself or call {@link TaskContext.handBack}.
   */
  readonly signal: AbortSignal;
  /**
   * A key that names this step of this chain: the same for every attempt of the step (retries,
   * re-deliveries, a takeover after a crash, an operator's retry), different for the next step
   * and for the next chain on the same entity. Send it with the step's effect (for example as the
   * `Idempotency-Key` header a payment API takes) so that a second run does not repeat the effect.
   */
  readonly idempotencyKey: string;
  /**
   * Stops the attempt before its effect, after `signal` aborted: throws `signal.reason`, which
   * the attempt reads as "stopped before the effect". At shutdown the lease is then handed back
   * silently (the next delivery runs the step with no alert). Any other rejection after the stop,
   * an `AbortError` included, counts as an attempt that may have had its effect: its next run is
   * alerted. Called before `signal` aborted, it throws an `Error` (a failed attempt).
   */
  handBack(): never;
  /** The HTTP request. */
  readonly request: Request;
  /**
   * Chains the next step: commits `seq + 1` with its ledger record (and the entity's
   * changes), then creates the task. The current step is then finished. Fenced: throws
   * `LeaseLostError` if this attempt no longer holds the lease.
   */
  schedule(path: string, payload?: Json, options?: ScheduleOptions): Promise<ScheduledStep>;
  /** Ends the chain: the step is finished and nothing follows. Also fenced. */
  complete(): Promise<void>;
  /**
   * Fans out (docs/guides/fan-out.md): starts a chain on each child's entity, then finishes this
   * step like `schedule()` does; the chain waits, holding no lease, and `options.join` runs as its
   * next step once every child settled. Fenced; a retried attempt resumes and starts no child twice.
   */
  fanOut(children: Iterable<FanOutChild<K>> | AsyncIterable<FanOutChild<K>>, options: FanOutOptions): Promise<FanOutStarted>;
  /** In a join step: the fan-out's outcome, counts and children; undefined in any other step. */
  fanIn(): Promise<FanIn<K> | undefined>;
  /** In a fan-out child's chain: stores a small JSON result (at most 16 KiB) the join reads once the chain completed. */
  setResult(value: Json): Promise<void>;
}

/** A task handler. Resolving finishes the step; throwing fails the attempt (retried). */
export type TaskHandler<E, P = Json | undefined, K = Key> = (ctx: TaskContext<E, P, K>) => Promise<void> | void;

/** An entity that says how it is stored. */
export interface SelfStoring {
  /** The properties to store for this entity (lock fields, if any, are left out). */
  toProperties(): Properties;
}

/**
 * The properties to store for a user's entity: `toProperties()` when it has one, else its own
 * enumerable data properties. Lock fields are the Locker's and are left out.
 */
export function entityProperties(entity: unknown): Properties {
  if (entity === null || typeof entity !== 'object') return {};
  const source = isSelfStoring(entity) ? entity.toProperties() : (entity as Properties);
  const out: Properties = {};
  for (const name of Object.keys(source)) {
    const value = source[name];
    if (!name.startsWith(LOCK_FIELD_PREFIX) && typeof value !== 'function' && value !== undefined) out[name] = value;
  }
  return out;
}

function isSelfStoring(entity: object): entity is SelfStoring {
  return typeof (entity as Partial<SelfStoring>).toProperties === 'function';
}

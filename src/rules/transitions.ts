/**
 * What each event writes to an entity's lock, in pure functions `(lock, event) → lock`
 * (docs/design.md, section 4, "Transitions"). `decide()` says whether an arriving task may act; these say what the
 * lock becomes when it does, and when anything else happens to a step. Nothing else in the library
 * builds a lock: the transitions table of docs/concepts/life-of-a-step.md is tested against them row by row.
 *
 * Every transition writes `ts` (`lock_ts`) with the event's time except `resend`, which writes
 * nothing, `alerted`, which writes only `lock_alerts` (the lease's age stays, so a stale lease
 * stays stale), and `abandon`, which writes a time a lease ago (so the lease is stale at once).
 * The ones a caller may ask for at the wrong moment
 * (kickoff, retry, cancel, resend) check the lock first and throw a typed error.
 */
import { ChainBusyError, TransitionError } from '../errors/errors';
import type { Lock } from './lock-fields';
import { StepState } from '../types';

/** Fields every event carries. */
export interface At {
  /** When the event happens; written as `lock_ts`. */
  now: Date;
}

/** The alert markers an event claimed (see `claimAlert`); undefined keeps the stored ones. */
export interface Claimed {
  alerts?: string[] | undefined;
}

/** A new step's identity: the chain it belongs to and the name of the task that carries it. */
export interface NewStep extends At {
  chain: string;
  task: string;
}

/** An attempt takes a free lease (or one it already holds). */
export function take(lock: Lock, e: At & { attempt: string }): Lock {
  return { ...lock, ts: e.now, req: e.attempt };
}

/** An attempt takes over a stale lease: the lost attempt counts as a failed one. */
export function overwrite(lock: Lock, e: At & Claimed & { attempt: string }): Lock {
  return { ...lock, ts: e.now, req: e.attempt, tries: lock.tries + 1, alerts: e.alerts ?? lock.alerts };
}

/** A stale lease was the step's last allowed attempt: the step fails for good, nobody runs it. */
export function expire(lock: Lock, e: At & Claimed & { error: string }): Lock {
  return { ...lock, ts: e.now, req: '', tries: lock.tries + 1, state: StepState.failed, err: e.error, alerts: e.alerts ?? lock.alerts };
}

/** The holder renews its lease: only the time moves. */
export function renew(lock: Lock, e: At): Lock {
  return { ...lock, ts: e.now };
}

/** The handler failed with attempts left: the lease is freed for a retry and the error kept. */
export function release(lock: Lock, e: At & { error: string }): Lock {
  return { ...lock, ts: e.now, req: '', tries: lock.tries + 1, state: StepState.scheduled, err: e.error };
}

/** The handler failed for good (its last attempt, a permanent error, or a finish the store refuses): the step fails. */
export function fail(lock: Lock, e: At & Claimed & { error: string }): Lock {
  return { ...lock, ts: e.now, req: '', tries: lock.tries + 1, state: StepState.failed, err: e.error, alerts: e.alerts ?? lock.alerts };
}

/** The step finished and nothing follows: the chain is complete (`lock_seq` moves past the step). */
export function finish(lock: Lock, e: At): Lock {
  return { ...lock, ts: e.now, req: '', seq: lock.seq + 1, tries: 0, state: StepState.complete, task: undefined, err: undefined, alerts: [] };
}

/** The running step scheduled the next one: `lock_seq + 1`, free, carried by a new task. */
export function schedule(lock: Lock, e: NewStep): Lock {
  return nextStep(lock, e);
}

/**
 * A chain starts on an idle entity (never scheduled, complete, failed or cancelled; or a lock the
 * Go library left free). Throws `ChainBusyError` while a step of this library is scheduled or a
 * Go attempt holds the lease.
 */
export function kickoff(lock: Lock, e: NewStep): Lock {
  if (lock.state === StepState.scheduled && (!lock.legacy || lock.req !== '')) {
    throw new ChainBusyError(`step ${lock.seq} is ${lock.req ? 'running' : 'scheduled'}; a new chain can start once it is complete, failed or cancelled`);
  }
  return nextStep(lock, e);
}

/**
 * The operator retries a failed step: it is scheduled again with a fresh retry budget. `lock_task`
 * is kept: it names the step's ledger record, whose own `task` field holds the new task's name.
 */
export function retry(lock: Lock, e: At): Lock {
  if (lock.state !== StepState.failed) throw new TransitionError(`step ${lock.seq} is ${lock.state ?? 'not scheduled'}; only a failed step can be retried`);
  return { ...lock, ts: e.now, req: '', tries: 0, state: StepState.scheduled, alerts: [] };
}

/**
 * The operator cancels the chain: its current step never runs (its tasks are dropped on arrival),
 * and an attempt still running it can no longer write. A kickoff may start a new chain.
 */
export function cancel(lock: Lock, e: At): Lock {
  if (lock.state !== StepState.scheduled) throw new TransitionError(`step ${lock.seq} is ${lock.state ?? 'not scheduled'}; only a scheduled or running chain can be cancelled`);
  return { ...lock, ts: e.now, req: '', state: StepState.cancelled, task: undefined };
}

/**
 * The operator re-sends the current step on a new task: the lock is only checked, never written.
 * The lease is left as it is, time included: a running attempt keeps it, a stale one is
 * overwritten (and counted) by the new delivery as by any other. `lock_task` keeps naming the
 * step's ledger record; the new task's name and the send count go in the record, as the sweep's
 * re-deliveries do.
 */
export function resend(lock: Lock, _e: At): Lock {
  if (lock.state !== StepState.scheduled) throw new TransitionError(`step ${lock.seq} is ${lock.state ?? 'not scheduled'}; only a scheduled step can be re-sent`);
  return { ...lock };
}

/**
 * The holder hands its lease back (the Locker is shutting down, and its handler stopped on
 * `ctx.signal`): the lease is free for the next delivery at once, and no failed attempt is counted.
 */
export function handBack(lock: Lock, e: At): Lock {
  return { ...lock, ts: e.now, req: '' };
}

/**
 * The holder gives its lease up while its handler may still be running (it did not stop on
 * `ctx.signal` in time): the lease is written as already stale (`lock_ts` a `leaseDuration` ago), its
 * holder kept, so the next delivery overwrites it at once through `overwrite`, counting the
 * interrupted attempt and alerting with its name.
 */
export function abandon(lock: Lock, e: At & { leaseDuration: number }): Lock {
  return { ...lock, ts: new Date(e.now.getTime() - e.leaseDuration) };
}

/**
 * Alerts marked sent, or kept past the end of their step: `lock_alerts` becomes the list given
 * (built by `markAlertsSent`/`carriedAlerts`), nothing else changes, time included (a lease's age
 * stays what it was). Applied alone by whoever marks alerts sent on a lock nobody holds, or after
 * `finish`/`schedule`/`kickoff`/`release`/`fail` in the same write, which then ends the step with
 * its unsent overwrite alerts kept and its sent ones marked.
 */
export function alerted(lock: Lock, e: Claimed): Lock {
  return { ...lock, alerts: e.alerts ?? lock.alerts };
}

/** Every transition, by its name (the transitions table of docs/concepts/life-of-a-step.md lists the same names). */
export const transitions = { take, overwrite, expire, renew, release, fail, finish, schedule, kickoff, retry, cancel, resend, alerted, handBack, abandon } as const;

/** The name of a lock event. */
export type LockEventName = keyof typeof transitions;

function nextStep(lock: Lock, e: NewStep): Lock {
  // The chain's run is kept while the chain goes on; a new chain has none unless its kickoff names one.
  const run = e.chain === lock.chain ? lock.run : undefined;
  return { ...lock, ts: e.now, req: '', seq: lock.seq + 1, tries: 0, state: StepState.scheduled, chain: e.chain, run, task: e.task, err: undefined, alerts: [], legacy: false };
}

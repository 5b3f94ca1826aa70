/**
 * One attempt at one step, from arrival to answer: decide, take the lease, run the handler under
 * it, then finish, release or fail the step. Returns the HTTP answer; never throws.
 */
import type { Key } from '@google-cloud/datastore';
import type { Request } from 'express';
import { alertEvent, claimAlert } from './alerts';
import type { EntityFactory, TaskContext, TaskHandler } from './context';
import { completeStep, makeContext } from './handler-context';
import type { Core } from './core';
import { afterFailure, decide, type Decision } from './decision';
import { ContentionError, LeaseLostError, PermanentError, StoreRejectedError, type StoreConfigError } from './errors';
import { classify, FaultClass } from './faults';
import { keyPath } from './key-codec';
import { Lease } from './lease';
import { describeError, readLock, sameLock, userProperties, writeLock, type Lock } from './lock-fields';
import { withContentionRetry } from './store/retry';
import { expire, fail as failStep, overwrite, release, take as takeLease } from './transitions';
import { AlertReason, type Json, type Properties, type Snapshot, type TaskInfo } from './types';

/** How a task request is answered. */
export interface Answer {
  status: number;
  message: string;
  /** Seconds, for a `Retry-After` header. */
  retryAfter?: number;
}

/** A task that arrived for a step. */
export interface Arrival {
  key: Key;
  seq: number;
  chain: string | undefined;
  attempt: string;
  payload: Json | undefined;
  task: TaskInfo;
  request: Request;
}

/** Runs one attempt and returns its answer. Store outages and lost leases become 503s, logged. */
export async function runAttempt<E, P>(
  core: Core,
  arrival: Arrival,
  handler: TaskHandler<E, P>,
  factory: EntityFactory<E>,
): Promise<Answer> {
  try {
    return await core.seen.coalesce(arrival.key, arrival.seq, () => attempt(core, arrival, handler, factory));
  } catch (error) {
    return unexpected(core, arrival, error);
  }
}

async function attempt<E, P>(core: Core, a: Arrival, handler: TaskHandler<E, P>, factory: EntityFactory<E>): Promise<Answer> {
  const taken = await take(core, a);
  if ('answer' in taken) return taken.answer;
  const lease = new Lease(core, a.key, a.seq, a.attempt, taken.snapshot);
  try {
    return await runUnderLease(core, a, lease, taken.props, handler, factory);
  } finally {
    await lease.close();
  }
}

/** Runs the handler under the lease, then finishes, releases or fails the step. */
async function runUnderLease<E, P>(
  core: Core, a: Arrival, lease: Lease, props: Properties, handler: TaskHandler<E, P>, factory: EntityFactory<E>,
): Promise<Answer> {
  const step = { done: false, next: undefined as number | undefined };
  let entity: E | undefined;
  let failure: { error: unknown } | undefined;
  lease.start();
  try {
    entity = factory(userProperties(props), a.key);
    await handler(makeContext(core, a, lease, entity, step) as TaskContext<E, P>);
  } catch (error) {
    failure = { error };
  }
  await lease.pause();

  if (step.done) {
    if (failure) core.config.logger.error('handler threw after its step was finished; the step stays finished', { key: keyPath(a.key), seq: a.seq, error: describeError(failure.error) });
    return { status: 200, message: step.next ? `step ${a.seq} done; step ${step.next} scheduled` : `step ${a.seq} done; chain complete` };
  }
  const lostLease = lease.lost ?? (failure?.error instanceof LeaseLostError ? failure.error : undefined);
  if (lostLease) return lost(core, a, lostLease);
  if (!failure) return finish(core, a, lease, entity);
  // The store's set-up is wrong (the handler let a StoreConfigError of its own write through): no write can help.
  if (classify(failure.error) === FaultClass.config) throw failure.error;
  return fail(core, a, lease, failure.error);
}

/**
 * Takes the lease, or answers. One strongly consistent read decides; most duplicates end there.
 * A lease is taken by a compare-and-swap on the version read: when another attempt wrote first,
 * the entity is read again and decided again (bounded, with backoff).
 */
async function take(core: Core, a: Arrival): Promise<{ answer: Answer } | { snapshot: Snapshot; props: Properties }> {
  const { store, leaseDuration } = core.config;
  const now = new Date(core.config.clock());
  const known = core.seen.recall(a.key, a.seq, a.chain, now.getTime());
  if (known) return { answer: answerFor(core, a, known) };
  let snapshot = await store.read(a.key);
  core.seen.observe(a.key, snapshot?.properties, now.getTime(), leaseDuration);
  const taken = await withContentionRetry(async () => {
    const decision = arrivalDecision(core, a, snapshot?.properties);
    if (!snapshot || (decision.action !== 'acquire' && decision.action !== 'overwrite' && decision.action !== 'expire')) {
      return { decision, snapshot: undefined, alerts: undefined };
    }
    const { lock, alerts } = takeover(core, a, decision, readLock(snapshot.properties), now);
    const written = await core.replace(a.key, snapshot, writeLock(snapshot.properties, lock));
    if (written) return { decision, snapshot: written, read: snapshot, alerts };
    snapshot = await store.read(a.key);
    core.seen.observe(a.key, snapshot?.properties, core.config.clock(), leaseDuration);
    throw new ContentionError(`${keyPath(a.key)} changed while attempt ${a.attempt} took its lease`);
  }, core.config.contention);

  const d = taken.decision;
  if (!taken.snapshot || !taken.read) return { answer: answerFor(core, a, d) };
  if (d.action === 'overwrite' || d.action === 'expire') {
    await reportTakeover(core, a, d, taken.read.properties, taken.alerts !== undefined, now);
    if (d.action === 'expire') return { answer: { status: 200, message: `step ${a.seq} failed: its lease expired with no attempts left` } };
  } else {
    core.emit('acquired', { key: a.key, seq: a.seq, attempt: a.attempt });
  }
  return { snapshot: taken.snapshot, props: taken.read.properties };
}

/** The lock an arriving attempt writes when it takes the lease (or fails a step whose leases kept expiring). */
function takeover(core: Core, a: Arrival, d: Decision, lock: Lock, now: Date): { lock: Lock; alerts: string[] | undefined } {
  if (d.action === 'overwrite') {
    const alerts = claimAlert(core.config, lock, AlertReason.overwrite);
    return { lock: overwrite(lock, { now, attempt: a.attempt, alerts }), alerts };
  }
  if (d.action === 'expire') {
    const alerts = claimAlert(core.config, lock, AlertReason.failure);
    const error = `lease of attempt ${d.previous} expired ${lock.tries + 1} time(s); no attempt finished the step`;
    return { lock: expire(lock, { now, error, alerts }), alerts };
  }
  return { lock: takeLease(lock, { now, attempt: a.attempt }), alerts: undefined };
}

/**
 * Reports a stale lease taken over (`overwrite`) or ended (`expire`): event, log line and, when
 * this transaction claimed it, the alert. An overwrite's alert is not awaited: the handler runs.
 */
async function reportTakeover(
  core: Core, a: Arrival, d: Extract<Decision, { action: 'overwrite' | 'expire' }>, props: Properties, alert: boolean, now: Date,
): Promise<void> {
  const retries = readLock(props).tries + 1;
  const where = { key: keyPath(a.key), seq: a.seq, previous: d.previous };
  let error: Error | undefined;
  if (d.action === 'overwrite') {
    core.emit('overwritten', { key: a.key, seq: a.seq, attempt: a.attempt, previous: d.previous, leaseAgeMs: d.leaseAgeMs });
    core.config.logger.warn('stale lease overwritten', { ...where, attempt: a.attempt, leaseAgeMs: d.leaseAgeMs });
  } else {
    error = new Error(`the lease of attempt ${d.previous} expired and the step has no attempts left`);
    core.emit('failed', { key: a.key, seq: a.seq, attempt: a.attempt, retries, error });
    core.config.logger.error('step failed: its lease expired too often', { ...where, retries });
  }
  if (!alert) return;
  const sending = core.alert(alertEvent({
    reason: d.action === 'overwrite' ? AlertReason.overwrite : AlertReason.failure,
    key: a.key, seq: a.seq, retries, previousAttempt: d.previous, newAttempt: d.action === 'overwrite' ? a.attempt : undefined,
    leaseAgeMs: d.leaseAgeMs, task: a.task, properties: props, at: now, error,
  }));
  if (d.action === 'expire') await sending;
}

function arrivalDecision(core: Core, a: Arrival, props: Properties | undefined): Decision {
  return decide({
    lock: props ? readLock(props) : undefined,
    seq: a.seq,
    chain: a.chain,
    attempt: a.attempt,
    now: core.config.clock(),
    leaseDurationMs: core.config.leaseDuration,
    goLeaseTimeoutMs: core.config.goLeaseTimeout,
    maxRetries: core.config.maxRetries,
  });
}

/** The answer to a task that does not run. */
function answerFor(core: Core, a: Arrival, d: Decision): Answer {
  if (d.action === 'refuse') {
    core.emit('refused', { key: a.key, seq: a.seq, attempt: a.attempt, holder: d.holder, retryAfterMs: d.retryAfterMs });
    const retryAfter = Math.max(1, Math.ceil(Math.min(d.retryAfterMs, core.config.leaseDuration) / 1000));
    return { status: core.config.lockFailedStatus, message: `step ${a.seq} is running in another attempt; retry later`, retryAfter };
  }
  if (d.action === 'drop') {
    core.emit('dropped', { key: a.key, seq: a.seq, attempt: a.attempt, reason: d.reason });
    core.config.logger.info('task dropped', { key: keyPath(a.key), seq: a.seq, reason: d.reason });
    return { status: 200, message: `dropped: ${DROP_MESSAGES[d.reason]}` };
  }
  throw new Error(`no answer for decision ${d.action}`);
}

const DROP_MESSAGES = {
  missing: 'the entity does not exist',
  finished: 'a duplicate of a finished step',
  unscheduled: 'no such step is scheduled',
  'other-chain': 'the task belongs to an earlier chain',
  failed: 'the step failed for good',
  cancelled: 'the chain was cancelled',
} as const;

/**
 * The handler returned without scheduling or completing: the step, and the chain, are complete.
 * When the store refuses the step's changes for good (too large, a value it cannot hold), they are
 * discarded and the attempt counts as failed: the error is stored, never a held lease.
 */
async function finish(core: Core, a: Arrival, lease: Lease, entity: unknown): Promise<Answer> {
  try {
    await completeStep(core, a, lease, entity);
  } catch (error) {
    if (error instanceof LeaseLostError) return lost(core, a, error);
    if (classify(error) === FaultClass.transient || classify(error) === FaultClass.config) throw error;
    core.config.logger.error('the step\'s changes cannot be saved; they are discarded and the attempt counts as failed', {
      key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: error instanceof Error ? error.message : String(error),
    });
    return fail(core, a, lease, error);
  }
  return { status: 200, message: `step ${a.seq} done; chain complete` };
}

/** The handler threw: release the lease for a retry (500), or fail the step for good (200). */
async function fail(core: Core, a: Arrival, lease: Lease, error: unknown): Promise<Answer> {
  let outcome: FailOutcome;
  try {
    outcome = await writeFailure(core, lease, error, describeError(error));
  } catch (writeError) {
    if (writeError instanceof LeaseLostError) return lost(core, a, writeError);
    if (!(writeError instanceof StoreRejectedError)) throw writeError;
    // The entity as stored, with this error beside it, is more than the store takes: store less of the error.
    outcome = await writeFailure(core, lease, error, shortError(error));
  }
  const fields = { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, retries: outcome.tries, error: error instanceof Error ? error.message : String(error) };
  if (outcome.verdict === 'release') {
    core.emit('released', { key: a.key, seq: a.seq, attempt: a.attempt, retries: outcome.tries, error });
    core.config.logger.warn('handler failed; the step will be retried', fields);
    return { status: 500, message: `step ${a.seq} failed (attempt ${outcome.tries} of ${core.config.maxRetries}); retry` };
  }
  core.emit('failed', { key: a.key, seq: a.seq, attempt: a.attempt, retries: outcome.tries, error });
  core.config.logger.error('step failed for good', fields);
  if (outcome.alerts) {
    await core.alert(alertEvent({
      reason: AlertReason.failure, key: a.key, seq: a.seq, retries: outcome.tries, previousAttempt: a.attempt,
      error, task: a.task, properties: outcome.props, at: outcome.at,
    }));
  }
  return { status: 200, message: `step ${a.seq} failed for good after ${outcome.tries} attempt(s)` };
}

interface FailOutcome { verdict: 'release' | 'fail'; tries: number; alerts: string[] | undefined; props: Properties; at: Date }

/** Writes a failed attempt (`release`, or `fail` for good) on the stored entity, the handler's changes left out; settled under the lease. */
async function writeFailure(core: Core, lease: Lease, error: unknown, err: string): Promise<FailOutcome> {
  const now = new Date(core.config.clock());
  let decided: FailOutcome | undefined;
  let intended: Lock | undefined;
  await lease.settle('release', () => lease.update((props, lock) => {
    const verdict = afterFailure(lock, core.config.maxRetries, error instanceof PermanentError);
    const alerts = verdict === 'fail' ? claimAlert(core.config, lock, AlertReason.failure) : undefined;
    intended = verdict === 'fail' ? failStep(lock, { now, error: err, alerts }) : release(lock, { now, error: err });
    decided = { verdict, tries: intended.tries, alerts, props, at: now };
    return writeLock(props, intended);
  }, (lock) => (intended && sameLock(lock, intended) ? true : undefined)));
  return decided!;
}

/** An error in a few hundred characters: its name and the start of its message. */
function shortError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 500 ? `${text.slice(0, 486)}… (truncated)` : text;
}

function lost(core: Core, a: Arrival, error: LeaseLostError): Answer {
  core.config.logger.warn('attempt lost its lease; nothing it did after that was saved', { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: error.message });
  return { status: 503, message: 'lease lost', retryAfter: 1 };
}

/** The answer to an attempt ended by an error nobody handled: a store fault, classified once, or a bug. */
function unexpected(core: Core, a: Arrival, error: unknown): Answer {
  const fields = { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: describeError(error) };
  switch (classify(error)) {
    case FaultClass.transient:
      core.config.logger.error('store unavailable; the step did not move on', fields);
      return { status: 503, message: 'store unavailable; retry', retryAfter: 1 };
    case FaultClass.config:
      core.configErrors.report(core.config.logger, error as StoreConfigError, fields);
      return { status: 503, message: 'the store is not set up right; retry once it is', retryAfter: 60 };
    case FaultClass.rejected:
      core.config.logger.error('the store refused the request; nothing changed', fields);
      return { status: 500, message: 'the store refused the request; retry' };
    case FaultClass.lost:
      return lost(core, a, error as LeaseLostError);
    default:
      core.config.logger.error('unexpected error; the step did not move on', fields);
      return { status: 503, message: 'internal error; retry', retryAfter: 1 };
  }
}

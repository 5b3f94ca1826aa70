/**
 * One attempt at one step, from arrival to answer: take the lease (`take.ts`), run the handler
 * under it, then finish the step (`finish.ts`), or release or fail it (`fail.ts`). Returns the HTTP
 * answer; never throws.
 */
import { failAttempt } from './fail';
import type { EntityFactory, TaskContext, TaskHandler } from './handler-types';
import { completeStep } from './finish';
import { makeContext, type StepProgress } from './task-context';
import type { Parts } from '../parts';
import { LeaseLostError, PermanentError, ShutdownError, type StoreConfigError } from '../errors/errors';
import { endedStep, outcomes, takeOutcome, type Outcome } from './outcome';
import type { Arrival } from './arrival';
import { classify, FaultClass } from '../errors/faults';
import { keyPath } from '../keys/key-codec';
import { Lease, type Interruption } from './lease';
import { describeError, readLock, userProperties } from '../rules/lock-fields';
import { take } from './take';
import { scrubError, secretsOf } from '../alert/redact';
import { Attr } from '../telemetry/telemetry';
import type { Properties } from '../types';

/** Runs one attempt and returns its answer. Store outages and lost leases become 503s, logged. */
export async function runAttempt<E, P>(
  parts: Parts,
  arrival: Arrival,
  handler: TaskHandler<E, P>,
  factory: EntityFactory<E>,
): Promise<Outcome> {
  try {
    const answer = await parts.seen.coalesce(arrival.key, arrival.seq, () => attempt(parts, arrival, handler, factory));
    // A fan-out child whose chain may have ended settles and runs the completion check before the
    // answer is sent (fanout/settle.ts says why); it never throws.
    if (endedStep(answer)) await parts.fanouts.settleAfterAnswer(arrival.key, arrival.chain);
    return answer;
  } catch (error) {
    return unexpected(parts, arrival, error);
  }
}

async function attempt<E, P>(parts: Parts, a: Arrival, handler: TaskHandler<E, P>, factory: EntityFactory<E>): Promise<Outcome> {
  const taken = await parts.telemetry.span('take', a, async (span) => {
    const result = await take(parts, a);
    span.setAttribute(Attr.outcome, 'answer' in result ? takeOutcome(result.answer) : 'taken');
    return result;
  });
  if ('answer' in taken) return taken.answer;
  const lease = new Lease(parts, a.key, a.seq, a.attempt, taken.snapshot, a.arrivedAt, undefined, taken.alerting);
  try {
    return await runUnderLease(parts, a, lease, taken.props, handler, factory);
  } finally {
    parts.drain.released(lease);
    await lease.close();
  }
}

/** Runs the handler under the lease, then finishes, releases or fails the step. */
async function runUnderLease<E, P>(
  parts: Parts, a: Arrival, lease: Lease, props: Properties, handler: TaskHandler<E, P>, factory: EntityFactory<E>,
): Promise<Outcome> {
  const step: StepProgress = { done: false, next: undefined };
  let entity: E | undefined;
  let failure: { error: unknown } | undefined;
  let ranOn = false;
  lease.start();
  parts.drain.holding(lease);
  // Taken after shutdown's time was up: handed back before the handler starts.
  const early = lease.interrupted();
  if (early) return handBack(parts, a, lease, false, early);
  try {
    entity = factory(userProperties(props), a.key);
    const ctx = makeContext(parts, a, lease, entity, step, readLock(props).chain) as TaskContext<E, P>;
    ranOn = await lease.race(parts.telemetry.span('run', a, () => Promise.resolve(handler(ctx))));
  } catch (error) {
    failure = { error };
  }
  parts.telemetry.count('run', a.key, { [Attr.outcome]: failure ? 'error' : 'ok' });
  const interruption = lease.interrupted();
  // Stopped, and still running at the end of its grace: whatever it does next is not written
  // (unless it already finished its step, whose answer follows).
  if (ranOn && interruption && !step.done) return handBack(parts, a, lease, true, interruption);
  await lease.pause();

  if (step.done) {
    if (failure) {
      const error = describeError(scrubError(failure.error, secretsOf(props, parts.config.redact)));
      parts.config.logger.error('handler threw after its step was finished; the step stays finished', { key: keyPath(a.key), seq: a.seq, error });
    }
    return outcomes.done(a.seq, step.next);
  }
  const lostLease = lease.lost ?? (failure?.error instanceof LeaseLostError ? failure.error : undefined);
  if (lostLease) return lost(parts, a, lostLease);
  if (!failure) return finish(parts, a, lease, entity);
  if (interruption) {
    // Stopped, and it said so explicitly (it rejected with the signal's reason itself, or called
    // ctx.handBack()): at shutdown, handed back silently, no attempt counted; for the request's time
    // limit, a failed attempt, released, counted, answered 503.
    if (failure.error === interruption) {
      if (interruption instanceof ShutdownError) return handBack(parts, a, lease, false, interruption);
      const answer = await failAttempt(parts, a, lease, failure.error);
      return answer.kind === 'released' ? outcomes.stoppedNearTimeout(answer) : answer;
    }
    // Any other rejection after the stop (an AbortError its effect's own call raised included) may
    // come after the effect: the lease is written stale, so the next run is an overwrite, alerted.
    if (!(failure.error instanceof LeaseLostError)) return handBack(parts, a, lease, true, interruption, failure.error);
  }
  // The store's set-up is wrong (the handler let a StoreConfigError of its own write through): no write can help.
  if (classify(failure.error) === FaultClass.config) throw failure.error;
  // The handler let through the transient fault its own schedule()/complete() gave up with: as when
  // finishing after it returned, the lease stays held (503), so the step is not run again unalerted
  // by a release; a later delivery takes the stale lease over, with an overwrite alert.
  if (failure.error === step.settleError && classify(failure.error) === FaultClass.transient) throw failure.error;
  // Its own schedule()/complete() was refused for good (the entity too large, a value the store
  // cannot hold, a toProperties() that throws): the handler ran, so the step fails for good, alerted.
  if (failure.error === step.settleError) return failAttempt(parts, a, lease, unstorable(parts, a, failure.error));
  return failAttempt(parts, a, lease, failure.error);
}

/**
 * The handler returned without scheduling or completing: the step, and the chain, are complete.
 * A transient store failure is retried under the lease (`Lease.settle`); a refusal that would come
 * again (an entity over the store's size limit, a value it cannot hold, a `toProperties()` that
 * throws) fails the step for good at once, alerted: the handler ran, so running it again unalerted
 * would break the promise that a re-run is always alerted (`unstorable`).
 */
async function finish(parts: Parts, a: Arrival, lease: Lease, entity: unknown): Promise<Outcome> {
  try {
    await completeStep(parts, a, lease, entity);
  } catch (error) {
    if (error instanceof LeaseLostError) return lost(parts, a, error);
    if (classify(error) === FaultClass.transient || classify(error) === FaultClass.config) throw error;
    return failAttempt(parts, a, lease, unstorable(parts, a, error));
  }
  return outcomes.done(a.seq);
}

/**
 * The error a step fails for good with when the handler ran but the store refused its result for
 * good: a `PermanentError` that says so, with the store's refusal as its cause. Logged.
 */
export function unstorable(parts: Parts, a: Arrival, error: unknown): PermanentError {
  const why = error instanceof Error ? error.message : String(error);
  parts.config.logger.error('the handler ran, but its result cannot be stored; the step fails for good (alerted) rather than run again', {
    key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: why,
  });
  return new PermanentError(`the handler ran, but its result could not be stored, so the step failed for good instead of running again: ${why}`, { cause: error });
}

/**
 * Hands the lease of a stopped attempt back (see `Lease.handBack`) and answers 503 so Cloud Tasks
 * delivers the task again: silently when the handler said it stopped before its effect (it
 * rejected with the signal's reason itself, or called `ctx.handBack()`) or never ran; written stale
 * (the next delivery's overwrite counts and alerts, naming this attempt) when it ran on, or
 * rejected with any other error (`rejected`), which may have come after its effect.
 */
async function handBack(parts: Parts, a: Arrival, lease: Lease, ranOn: boolean, why: Interruption, rejected?: unknown): Promise<Outcome> {
  const reason = why instanceof ShutdownError ? 'shutdown' : 'time-limit';
  const fields = { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, reason };
  try {
    await lease.handBack(ranOn);
  } catch (error) {
    if (error instanceof LeaseLostError) return lost(parts, a, error);
    throw error;
  }
  if (rejected !== undefined) {
    parts.config.logger.error('handler rejected after it was stopped with an error other than the signal\'s reason, so its effect may have happened; its lease is written stale, so the next delivery takes it over with an alert', { ...fields, error: describeError(rejected) });
  } else if (ranOn) parts.config.logger.error('handler still running after it was stopped; its lease is written stale, so the next delivery takes it over with an alert', fields);
  else parts.config.logger.warn('lease handed back; the next delivery runs the step', fields);
  parts.emit('handedBack', { key: a.key, seq: a.seq, attempt: a.attempt, reason, silent: !ranOn });
  return outcomes.handedBack(a.seq, reason);
}

function lost(parts: Parts, a: Arrival, error: LeaseLostError): Outcome {
  parts.config.logger.warn('attempt lost its lease; nothing it did after that was saved', { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: error.message });
  return outcomes.leaseLost();
}

/** The answer to an attempt ended by an error nobody handled: a store fault, classified once, or a bug. */
function unexpected(parts: Parts, a: Arrival, error: unknown): Outcome {
  const fields = { key: keyPath(a.key), seq: a.seq, attempt: a.attempt, error: describeError(error) };
  switch (classify(error)) {
    case FaultClass.transient:
      parts.config.logger.error('store unavailable; the step did not move on', fields);
      return outcomes.storeUnavailable();
    case FaultClass.config:
      parts.configErrors.report(parts.config.logger, error as StoreConfigError, fields);
      return outcomes.storeConfig();
    case FaultClass.rejected:
      parts.config.logger.error('the store refused the request; nothing changed', fields);
      return outcomes.storeRejected();
    case FaultClass.lost:
      return lost(parts, a, error as LeaseLostError);
    default:
      parts.config.logger.error('unexpected error; the step did not move on', fields);
      return outcomes.internal();
  }
}

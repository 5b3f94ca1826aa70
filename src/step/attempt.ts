/**
 * One attempt at one step, from arrival to answer: take the lease (`take.ts`), run the handler
 * under it, then end the attempt (`attempt-end.ts`: finish the step, release or fail it, hand the
 * lease back, or report it lost). Returns the outcome; never throws.
 */
import type { SettingName, Settings } from '../config/settings';
import { lostLease } from './attempt-end';
import { decideAfterFinish, decideEnd, type AttemptEnd } from './end-decision';
import type { EntityFactory, TaskContext, TaskHandler } from './handler-types';
import { makeContext, type StepProgress } from './task-context';
import type { Parts } from '../parts';
import type { LeaseLostError, StoreConfigError } from '../errors/errors';
import { endedStep, outcomes, takeOutcome, type Outcome } from './outcome';
import type { Arrival } from './arrival';
import { classify, FaultClass } from '../errors/faults';
import { keyPath } from '../keys/key-codec';
import type { Lease } from './lease';
import { describeError, readLock, userProperties } from '../rules/lock-fields';
import { scrubError, secretsOf } from '../alert/redact';
import { Attr } from '../telemetry/telemetry';
import type { Properties } from '../types';

/** What an attempt reads of the configuration: the logger and the redaction (each part it uses has its own settings). */
export const ATTEMPT_SETTINGS = ['logger', 'redact'] as const satisfies readonly SettingName[];
export type AttemptSettings = Settings<typeof ATTEMPT_SETTINGS>;

/** The parts an attempt uses, with its settings. */
export type AttemptParts = Pick<Parts, 'seen' | 'drain' | 'telemetry' | 'taker' | 'ends' | 'fanouts' | 'configErrors'> & { readonly config: AttemptSettings };

/** Runs one attempt and returns its answer. Store outages and lost leases become 503s, logged. */
export async function runAttempt<E, P>(
  parts: AttemptParts,
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

async function attempt<E, P>(parts: AttemptParts, a: Arrival, handler: TaskHandler<E, P>, factory: EntityFactory<E>): Promise<Outcome> {
  const taken = await parts.telemetry.span('take', a, async (span) => {
    const result = await parts.taker.take(a);
    span.setAttribute(Attr.outcome, 'answer' in result ? takeOutcome(result.answer) : 'taken');
    return result;
  });
  if ('answer' in taken) return taken.answer;
  const { lease } = taken;
  try {
    return await runUnderLease(parts, a, lease, taken.props, handler, factory);
  } finally {
    parts.drain.released(lease);
    await lease.close();
  }
}

/** Runs the handler under the lease, then ends the attempt as `decideEnd()` decides (`carryOut`). */
async function runUnderLease<E, P>(
  parts: AttemptParts, a: Arrival, lease: Lease, props: Properties, handler: TaskHandler<E, P>, factory: EntityFactory<E>,
): Promise<Outcome> {
  const step: StepProgress = { done: false, next: undefined };
  let entity: E | undefined;
  let failure: { error: unknown } | undefined;
  let ranOn = false;
  lease.start();
  parts.drain.holding(lease);
  // Taken after shutdown's time was up: handed back before the handler starts.
  const early = lease.interrupted();
  if (early) return parts.ends.handBack(a, lease, false, early);
  try {
    entity = factory(userProperties(props), a.key);
    const ctx = makeContext(parts, a, lease, entity, step, readLock(props).chain) as TaskContext<E, P>;
    ranOn = await lease.race(parts.telemetry.span('run', a, () => Promise.resolve(handler(ctx))));
  } catch (error) {
    failure = { error };
  }
  const interruption = lease.interrupted();
  // Stopped, and still running at the end of its grace: handed back at once, the renewal not waited for.
  if (!(ranOn && interruption && !step.done)) await lease.pause();
  const end = decideEnd({
    ranOn, interruption, finished: step.done, next: step.next, failure, settleError: step.settleError, fanOutError: step.fanOutError, lost: lease.lost,
  });
  return carryOut(parts, a, lease, props, entity, end);
}

/** Carries out the end `decideEnd()` decided, in one place. */
async function carryOut(parts: AttemptParts, a: Arrival, lease: Lease, props: Properties, entity: unknown, end: AttemptEnd): Promise<Outcome> {
  switch (end.end) {
    case 'finished':
      if ('threw' in end) {
        const error = describeError(scrubError(end.threw, secretsOf(props, parts.config.redact)));
        parts.config.logger.error('handler threw after its step was finished; the step stays finished', { key: keyPath(a.key), seq: a.seq, error });
      }
      return outcomes.done(a.seq, end.next);
    case 'finish':
      try {
        await parts.ends.complete(a, lease, entity);
        return outcomes.done(a.seq);
      } catch (error) {
        return carryOut(parts, a, lease, props, entity, decideAfterFinish(error));
      }
    case 'fail': {
      const answer = await parts.ends.fail(a, lease, end.error);
      return end.nearTimeout && answer.kind === 'released' ? outcomes.stoppedNearTimeout(answer) : answer;
    }
    case 'handBack':
      return parts.ends.handBack(a, lease, end.ranOn, end.why, end.rejected);
    case 'lost':
      return parts.ends.lost(a, end.error);
    case 'unstorable':
      return parts.ends.fail(a, lease, parts.ends.unstorable(a, end.error));
    case 'unsure':
      throw end.error; // answered by `unexpected()`: 503 with the lease held, or the store's set-up reported
  }
}

/** The answer to an attempt ended by an error nobody handled: a store fault, classified once, or a bug. */
function unexpected(parts: Pick<AttemptParts, 'config' | 'configErrors'>, a: Arrival, error: unknown): Outcome {
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
      return lostLease(parts.config, a, error as LeaseLostError);
    default:
      parts.config.logger.error('unexpected error; the step did not move on', fields);
      return outcomes.internal();
  }
}

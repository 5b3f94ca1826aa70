/**
 * The task context a running handler is given (`ctx`): what it can do to its step, with
 * `schedule()` (the next step and its task, committed together through the ledger), `complete()`
 * and `fanOut()`, all fenced by the lease.
 */
import { createHash } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import type { Arrival } from './arrival';
import { entityProperties, type ScheduledStep, type TaskContext } from './handler-types';
import { StepAlreadyFinishedError } from '../errors/errors';
import { keyPath } from '../keys/key-codec';
import type { Lease } from './lease';
import type { Parts } from '../parts';

/**
 * What the attempt learns from the handler's own `schedule()`/`complete()`/`fanOut()`: whether the
 * step was finished, the next step, the error that made a finishing write give up, and the error
 * that stopped a fan-out before its seal, if any (`end-decision.ts` decides on them).
 */
export interface StepProgress {
  done: boolean;
  next: number | undefined;
  /** The error a finishing write (`schedule()`, `complete()`, the seal of `fanOut()`) gave up with after its retries under the lease. */
  settleError?: unknown;
  /** The error that stopped `fanOut()` before its seal: its source, a child, or the store while adding children. */
  fanOutError?: unknown;
}

/**
 * The handler's context; `step` records whether the handler scheduled or completed the step itself.
 * Its finishing calls are the attempt's ends (`parts.ends`); fan-out reads and results go to the fan-out part.
 */
export function makeContext<E>(parts: Pick<Parts, 'ends' | 'fanouts'>, a: Arrival, lease: Lease, entity: E, step: StepProgress, chain: string | undefined): TaskContext<E> {
  const finishOnce = (): void => {
    if (step.done) throw new StepAlreadyFinishedError(`step ${a.seq} of ${keyPath(a.key)} was already scheduled or completed by this handler`);
  };
  /** The handler's own finishing write moved the chain on to step `next`. */
  const movedOn = (next: number): void => {
    step.done = true;
    step.next = next;
  };
  let idempotency: string | undefined;
  return {
    key: a.key,
    entity,
    seq: a.seq,
    payload: a.payload,
    attempt: a.attempt,
    get task() {
      return a.task; // parsed on first use
    },
    get signal() {
      return lease.signal; // made on first use: most handlers never look
    },
    request: a.request,
    get idempotencyKey() {
      return (idempotency ??= idempotencyKey(a.key, chain, a.seq)); // hashed on first use
    },
    handBack(): never {
      const signal = lease.signal;
      if (signal.aborted) throw signal.reason;
      throw new Error(`ctx.handBack() was called on ${keyPath(a.key)} step ${a.seq}, but nothing asked the attempt to stop (ctx.signal has not aborted)`);
    },
    async schedule(path, payload, options): Promise<ScheduledStep> {
      finishOnce();
      const next = parts.ends.nextStep(path, payload, options);
      const own = await remember(step, Promise.resolve().then(() => entityProperties(entity)));
      const record = await remember(step, parts.ends.schedule(a, lease, own, next));
      movedOn(record.seq);
      return parts.ends.scheduled(a, record);
    },
    async complete(): Promise<void> {
      finishOnce();
      await remember(step, Promise.resolve().then(() => parts.ends.complete(a, lease, entity)));
      step.done = true;
    },
    async fanOut(children, options) {
      finishOnce();
      // Only the seal is the step's finishing write; an error before it (the source, a child, the
      // store while adding children) is the attempt's failure, and a retry resumes (end-decision.ts).
      try {
        return await parts.fanouts.start(a, lease, children, options, (header) => remember(step, parts.ends.seal(a, lease, entity, header, movedOn)));
      } catch (error) {
        if (error !== step.settleError) step.fanOutError = error;
        throw error;
      }
    },
    fanIn() {
      return parts.fanouts.fanIn(a.key, a.chain, a.seq);
    },
    setResult(value) {
      return parts.fanouts.setResult(a.key, a.chain, value);
    },
  };
}

/**
 * The idempotency key of step `seq` of `chain` on `key` (`ctx.idempotencyKey`): a hash of the
 * three, so every attempt of the step gets the same key and the next step or chain another.
 */
export function idempotencyKey(key: Key, chain: string | undefined, seq: number): string {
  const hash = createHash('sha256').update(`idempotency\n${key.namespace ?? ''}\n${keyPath(key)}\n${chain ?? ''}\n${seq}`).digest('hex').slice(0, 32);
  return `${hash}-${seq}`;
}

/** Notes on `step` the error a finishing write gave up with, and rethrows it to the handler. */
async function remember<T>(step: StepProgress, settling: Promise<T>): Promise<T> {
  try {
    return await settling;
  } catch (error) {
    step.settleError = error;
    throw error;
  }
}


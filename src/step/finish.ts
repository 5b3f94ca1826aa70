/**
 * What a running handler can do to its step: the context it is given, with `schedule()` (the
 * next step and its task, committed together through the outbox) and `complete()`, both fenced.
 */
import type { Arrival } from '../http/arrival';
import { entityProperties, type ScheduledStep, type TaskContext } from './handler-types';
import type { Core } from '../core';
import { StepAlreadyFinishedError } from '../errors/errors';
import { keyPath } from '../store/key-codec';
import type { Lease } from './lease';
import { sameLock, writeLock, type Lock } from '../rules/lock-fields';
import { dispatch } from '../chain/dispatcher';
import { checkStep, scheduledStep } from '../chain/next-step';
import { newChainId } from '../chain/task-name';
import { Attr } from '../telemetry/telemetry';
import { finish as finishStep } from '../rules/transitions';
import { endStepAlerts, keepRecordForAlerts, NO_ALERTS, sentByAttempt } from '../alert/overwrite-alert';

/**
 * What the attempt learns from the handler's own `schedule()`/`complete()`: whether the step was
 * finished, the next step, and the transient store error that made finishing give up, if any.
 */
export interface StepProgress {
  done: boolean;
  next: number | undefined;
  /** The error a `schedule()`/`complete()` gave up with after its retries under the lease. */
  settleError?: unknown;
}

/** The handler's context; `step` records whether the handler scheduled or completed the step itself. */
export function makeContext<E>(core: Core, a: Arrival, lease: Lease, entity: E, step: StepProgress): TaskContext<E> {
  const finishOnce = (): void => {
    if (step.done) throw new StepAlreadyFinishedError(`step ${a.seq} of ${keyPath(a.key)} was already scheduled or completed by this handler`);
  };
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
    async schedule(path, payload, options): Promise<ScheduledStep> {
      finishOnce();
      const next = checkStep(core, path, payload, options);
      const own = entityProperties(entity);
      const alerting = sentByAttempt(a); // an overwrite's alerts, sent while the handler ran (none in the usual case)
      const alertsSent = alerting ? await alerting : NO_ALERTS;
      const now = new Date(core.config.clock());
      let planned: ReturnType<typeof scheduledStep> | undefined;
      const record = await remember(step, core.telemetry.span('finish', a, () => lease.settle('schedule', () => lease.fenced((tx, props, lock) => {
        const chainId = lock.chain ?? newChainId(); // entities the Go library wrote have no chain yet
        planned = endStepAlerts(core, scheduledStep(a.key, lock, chainId, next, now), lock, alertsSent, now);
        core.write(tx, a.key, writeLock({ ...props, ...own }, planned.lock));
        if (lock.task !== undefined) tx.deleteLedger(a.key, lock.task); // this step moved on: its record goes in the same commit
        tx.putLedger(planned.record);
        return planned.record;
      }, (lock) => (planned && sameLock(lock, planned.lock) ? planned.record : undefined)))));
      core.seen.forget(a.key);
      core.telemetry.count('finish', a.key, { [Attr.outcome]: 'scheduled' });
      step.done = true;
      step.next = record.seq;
      core.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt, next: record.seq });
      core.emit('scheduled', { key: a.key, seq: record.seq, attempt: a.attempt, task: record.task, path: record.path });
      const sent = await dispatch(core, record);
      return { seq: record.seq, task: record.task, sent };
    },
    async complete(): Promise<void> {
      finishOnce();
      await remember(step, completeStep(core, a, lease, entity));
      step.done = true;
    },
  };
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

/**
 * Marks the step complete (`lock_seq + 1`, nothing scheduled) and saves the entity; fenced, and
 * retried under the live lease when the store fails transiently (`Lease.settle`).
 */
export async function completeStep(core: Core, a: Arrival, lease: Lease, entity: unknown): Promise<void> {
  const own = entityProperties(entity);
  const alerting = sentByAttempt(a); // an overwrite's alerts, sent while the handler ran (none in the usual case)
  const alertsSent = alerting ? await alerting : NO_ALERTS;
  const now = new Date(core.config.clock());
  let intended: Lock | undefined;
  let record: string | undefined;
  await core.telemetry.span('finish', a, () => lease.settle('finish', () => lease.update((props, lock) => {
    record = lock.task;
    intended = endStepAlerts(core, { lock: finishStep(lock, { now }) }, lock, alertsSent, now).lock;
    return writeLock({ ...props, ...own }, intended);
  }, (lock) => (intended && sameLock(lock, intended) ? true : undefined))));
  core.telemetry.count('finish', a.key, { [Attr.outcome]: 'complete' });
  // The record goes, unless the chain ended with overwrite alerts unsent: then the sweep needs it to find them.
  if (intended!.alerts.length === 0) core.retire(a.key, record);
  else await keepRecordForAlerts(core, a.key, record, now);
  core.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt });
}

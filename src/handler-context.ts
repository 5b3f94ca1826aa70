/**
 * What a running handler can do to its step: the context it is given, with `schedule()` (the
 * next step and its task, committed together through the outbox) and `complete()`, both fenced.
 */
import type { Arrival } from './attempt';
import { entityProperties, type ScheduledStep, type TaskContext } from './context';
import type { Core } from './core';
import { StepAlreadyFinishedError } from './errors';
import { keyPath } from './key-codec';
import type { Lease } from './lease';
import { writeLock } from './lock-fields';
import { checkStep, dispatch, scheduledStep } from './outbox';
import { newChainId } from './task-name';
import { finish as finishStep } from './transitions';

/** The handler's context; `step` records whether the handler scheduled or completed the step itself. */
export function makeContext<E>(core: Core, a: Arrival, lease: Lease, entity: E, step: { done: boolean; next: number | undefined }): TaskContext<E> {
  const finishOnce = (): void => {
    if (step.done) throw new StepAlreadyFinishedError(`step ${a.seq} of ${keyPath(a.key)} was already scheduled or completed by this handler`);
  };
  return {
    key: a.key,
    entity,
    seq: a.seq,
    payload: a.payload,
    attempt: a.attempt,
    task: a.task,
    signal: lease.signal,
    request: a.request,
    async schedule(path, payload, options): Promise<ScheduledStep> {
      finishOnce();
      const next = checkStep(core, path, payload, options);
      await lease.stop();
      const now = new Date(core.config.clock());
      const { record, chain } = await lease.fenced((tx, props, lock) => {
        const chainId = lock.chain ?? newChainId(); // entities the Go library wrote have no chain yet
        const planned = scheduledStep(a.key, lock, chainId, next, now);
        core.write(tx, a.key, writeLock({ ...props, ...entityProperties(entity) }, planned.lock));
        tx.putOutbox(planned.record);
        return { record: planned.record, chain: chainId };
      });
      core.seen.forget(a.key);
      step.done = true;
      step.next = record.seq;
      core.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt, next: record.seq });
      core.emit('scheduled', { key: a.key, seq: record.seq, attempt: a.attempt, task: record.name, path: record.path });
      const sent = await dispatch(core, record, chain);
      return { seq: record.seq, task: record.name, sent };
    },
    async complete(): Promise<void> {
      finishOnce();
      await lease.stop();
      await completeStep(core, a, lease, entity);
      step.done = true;
    },
  };
}

/** Marks the step complete (`lock_seq + 1`, nothing scheduled) and saves the entity; fenced. */
export async function completeStep(core: Core, a: Arrival, lease: Lease, entity: unknown): Promise<void> {
  const now = new Date(core.config.clock());
  await lease.update((props, lock) => writeLock({ ...props, ...entityProperties(entity) }, finishStep(lock, { now })));
  core.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt });
}

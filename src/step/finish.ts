/**
 * Finishing a step when its handler returned without scheduling (or called `ctx.complete()`): the
 * `finish` transition, fenced and settled under the lease; the parts a handler's finishing writes use.
 */
import type { Arrival } from './arrival';
import { entityProperties } from './handler-types';
import type { Parts } from '../parts';
import type { Lease } from './lease';
import { sameLock, type Lock } from '../rules/lock-fields';
import { finish as finishStep } from '../rules/transitions';
import { alertGrace, endStepAlerts } from '../rules/alert-markers';

/** The parts a handler's finishing writes use. */
export type StepParts = Pick<Parts, 'config' | 'locks' | 'reads' | 'emit' | 'dispatcher' | 'ledger' | 'telemetry' | 'fanouts'>;

/**
 * Marks the step complete (`lock_seq + 1`, nothing scheduled) and saves the entity; fenced, and
 * retried under the live lease when the store fails transiently (`Lease.settle`).
 */
export async function completeStep(parts: StepParts, a: Arrival, lease: Lease, entity: unknown): Promise<void> {
  const own = entityProperties(entity);
  const alertsSent = await lease.sentAlerts(); // an overwrite's alerts, sent while the handler ran (none in the usual case)
  const now = new Date(parts.config.clock());
  let intended: Lock | undefined;
  let record: string | undefined;
  await parts.telemetry.span('finish', a, () => lease.settle('finish', () => lease.update((lock) => {
    record = lock.task;
    intended = endStepAlerts(parts.config, { lock: finishStep(lock, { now }) }, lock, alertsSent, now).lock;
    return intended;
  }, (lock) => (intended && sameLock(lock, intended) ? true : undefined), own)));
  // The record goes, unless the chain ended with overwrite alerts unsent: then the sweep needs it to find them.
  if (intended!.alerts.length === 0) parts.ledger.retire(a.key, record);
  else await parts.ledger.keepForAlerts(a.key, record, new Date(now.getTime() + alertGrace(parts.config)));
  parts.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt });
}

/**
 * Finishing a step when its handler returned without scheduling (or called `ctx.complete()`): the
 * `finish` transition, fenced and settled under the lease.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Arrival } from './arrival';
import { entityProperties } from './handler-types';
import type { Ledger } from '../chain/ledger';
import type { Emit } from '../events/emit';
import type { Telemetry } from '../telemetry/telemetry';
import type { Lease } from './lease';
import { sameLock, type Lock } from '../rules/lock-fields';
import { finish as finishStep } from '../rules/transitions';
import { ALERT_RULES, alertGrace, endStepAlerts } from '../rules/alert-markers';

/** What finishing a step reads of the configuration: the clock and the alert rules. */
export const FINISH_SETTINGS = ['clock', ...ALERT_RULES] as const satisfies readonly SettingName[];
export type FinishSettings = Settings<typeof FINISH_SETTINGS>;

/** The parts finishing a step writes and reports through, with its settings. */
export interface FinishParts {
  readonly config: FinishSettings;
  readonly emit: Emit;
  readonly ledger: Ledger;
  readonly telemetry: Telemetry;
}

/**
 * Marks the step complete (`lock_seq + 1`, nothing scheduled) and saves the entity; fenced, and
 * retried under the live lease when the store fails transiently (`Lease.settle`).
 */
export async function completeStep(parts: FinishParts, a: Arrival, lease: Lease, entity: unknown): Promise<void> {
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
  // Removed at the version the take read it at, when that is the record (else checked against the entity when it goes).
  if (intended!.alerts.length === 0) parts.ledger.retire(a.key, record, lease.record && lease.record.id === record ? lease.record.version : undefined);
  else await parts.ledger.keepForAlerts(a.key, record, new Date(now.getTime() + alertGrace(parts.config)));
  parts.emit('completed', { key: a.key, seq: a.seq, attempt: a.attempt });
}

/**
 * Marking alerts sent on the stored entity, after the alerter took them, when no write of the
 * step could carry the mark: a compare-and-swap that changes only `lock_alerts` (the `alerted`
 * transition), and only on a lock nobody holds (a holder's lease is a compare-and-swap on the
 * version it wrote: a foreign write would cost it its lease). What cannot be marked is sent again
 * later, under the same id.
 */
import type { Key } from '@google-cloud/datastore';
import { markAlertsSent } from './alerts';
import type { Parts } from '../parts';
import { ContentionError } from '../errors/errors';
import { keyPath } from '../store/key-codec';
import { readLock } from '../rules/lock-fields';
import { withContentionRetry } from '../store/retry';
import { alerted } from '../rules/transitions';

/** Marks the claims `markers` sent on `key`'s lock; never throws (a failure is logged: the alerts may be sent again, same ids). */
export async function markSentOnEntity(parts: Pick<Parts, 'config' | 'locks'>, key: Key, markers: readonly string[]): Promise<void> {
  if (markers.length === 0) return;
  const { store } = parts.config;
  try {
    await withContentionRetry(async () => {
      const snapshot = await store.read(key);
      if (!snapshot) return;
      const lock = readLock(snapshot.properties);
      if (lock.req !== '') return; // a holder sends what is still unmarked, and marks it in its own writes
      const alerts = markAlertsSent(lock.alerts, lock.seq, markers);
      if (alerts.length === lock.alerts.length && alerts.every((a, i) => a === lock.alerts[i])) return;
      const written = await parts.locks.replace(key, snapshot, alerted(lock, { alerts }));
      if (!written) throw new ContentionError(`${keyPath(key)} changed while its alerts were marked sent`);
    }, parts.config.contention);
  } catch (error) {
    parts.config.logger.warn('alert sent but not marked sent; it may be sent again (same id)', {
      key: keyPath(key), alerts: markers.length, error: error instanceof Error ? error.message : String(error),
    });
  }
}

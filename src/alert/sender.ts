/**
 * The alerts port (docs/design.md, section 15): sends alerts within `alertTimeout` (never throws; a
 * failed send is logged), marks on the stored entity the claims the alerter took, and keeps the
 * sends in flight, so `shutdown()` waits for them. Claiming an alert is part of the write that
 * records the event; marking it sent is the `alerted` transition (`rules/transitions.ts`), written
 * through the lock part. Re-sending what was never marked is `resend.ts`'s.
 */
import type { SettingName, Settings } from '../config/settings';
import { redactProperties, scrub } from './redact';
import type { Key } from '@google-cloud/datastore';
import type { Config } from '../config/options';
import { alerted } from '../rules/transitions';
import { keyPath } from '../keys/key-codec';
import type { Locks, SwapStep } from '../locks/locks';
import { errorMessage } from '../errors/error-text';
import { markAlertsSent } from '../rules/alert-markers';
import type { ClaimedAlert } from './event';
import { withOrigin } from './origin';
import type { AlertEvent } from '../types';

/** What the alerts part reads of the configuration: the alerter, its time, the redaction, what names the origin, the logger. */
export const ALERT_SETTINGS = ['alerter', 'alertTimeout', 'redact', 'logger', 'project', 'service', 'statusUrl', 'keyAppId'] as const satisfies readonly SettingName[];
export type AlertSettings = Settings<typeof ALERT_SETTINGS>;

/** The alerts part (see the file's comment); built once per Locker. */
export class AlertSender {
  private readonly sending = new Set<Promise<boolean>>();

  constructor(private readonly config: AlertSettings, private readonly locks: Locks) {}

  /** Sends `event`; resolves to whether the alerter took it. */
  send(event: AlertEvent): Promise<boolean> {
    const sending = sendAlert(this.config, event).finally(() => this.sending.delete(sending));
    this.sending.add(sending);
    return sending;
  }

  /** Sends every alert at once, each bounded by `alertTimeout`; resolves to the markers of those the alerter took. */
  async sendAll(alerts: readonly ClaimedAlert[]): Promise<string[]> {
    const taken = await Promise.all(alerts.map(async (c) => ((await this.send(c.event)) ? c.marker : undefined)));
    return taken.filter((m): m is string => m !== undefined);
  }

  /**
   * Marks the claims `markers` sent on `key`'s lock, when no write of the step could carry the
   * mark: a compare-and-swap that changes only `lock_alerts` (the `alerted` transition), and only
   * on a lock nobody holds (a holder's lease is a compare-and-swap on the version it wrote: a
   * foreign write would cost it its lease). Never throws: what cannot be marked is logged and sent
   * again later, under the same id.
   */
  async markSent(key: Key, markers: readonly string[]): Promise<void> {
    if (markers.length === 0) return;
    try {
      await this.locks.swap(key, 'its alerts were marked sent', await this.locks.read(key), (current): SwapStep<void> => {
        if (!current) return { done: undefined };
        const { lock } = current;
        if (lock.req !== '') return { done: undefined }; // a holder sends what is still unmarked, and marks it in its own writes
        const alerts = markAlertsSent(lock.alerts, lock.seq, markers);
        if (alerts.length === lock.alerts.length && alerts.every((a, i) => a === lock.alerts[i])) return { done: undefined };
        return { write: alerted(lock, { alerts }), then: () => undefined };
      });
    } catch (error) {
      this.config.logger.warn('alert sent but not marked sent; it may be sent again (same id)', {
        key: keyPath(key), alerts: markers.length, error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** Resolves once every send in flight settled. */
  async drain(): Promise<void> {
    await Promise.all([...this.sending]);
  }
}

/** Sends an alert through the configured alerter within `alertTimeout`; logs and swallows failures. Resolves to whether the alerter took it. */
export async function sendAlert(config: AlertSettings, raw: AlertEvent): Promise<boolean> {
  const alerter = config.alerter;
  if (!alerter) return false;
  const event = redacted(config, withOrigin(config, raw));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the alerter did not finish within ${config.alertTimeout} ms`)), config.alertTimeout);
    timer.unref();
  });
  try {
    const sending = Promise.resolve().then(() => (typeof alerter === 'function' ? alerter(event) : alerter.send(event)));
    await Promise.race([sending, timeout]);
    config.logger.info('alert sent', { reason: event.reason, key: event.keyPath, seq: event.seq });
    return true;
  } catch (error) {
    config.logger.error('alert could not be sent', {
      reason: event.reason,
      key: event.keyPath,
      seq: event.seq,
      error: errorMessage(error),
      cause: error instanceof Error && error.cause !== undefined ? String(error.cause) : undefined,
    });
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** The event with the Locker's `redact` applied: properties redacted, their secrets scrubbed from the error. */
function redacted(config: Pick<Config, 'redact'>, event: AlertEvent): AlertEvent {
  if (!config.redact) return event;
  const { properties, secrets } = redactProperties(event.properties, config.redact);
  const out: AlertEvent = { ...event, properties };
  if (event.error) {
    out.error = { message: scrub(event.error.message, secrets), ...(event.error.stack ? { stack: scrub(event.error.stack, secrets) } : {}) };
  }
  return out;
}

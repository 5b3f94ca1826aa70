/**
 * The alerts port: sends an alert within `alertTimeout` (never throws; a failed send is logged)
 * and keeps the sends in flight, so `shutdown()` waits for them (docs/design.md, section 15).
 * Claiming an alert and marking it sent are lock transitions (`rules/transitions.ts`, `alerted`)
 * written through the lock writer; re-sending what was never marked is the sweep's
 * (`failure-alert.ts`, `overwrite-alert.ts`).
 */
import type { Config } from '../config/options';
import type { AlertEvent } from '../types';
import { sendAlert } from './alerts';

export class AlertSender {
  private readonly sending = new Set<Promise<boolean>>();

  constructor(private readonly config: Config) {}

  /** Sends `event`; resolves to whether the alerter took it. */
  send(event: AlertEvent): Promise<boolean> {
    const sending = sendAlert(this.config, event).finally(() => this.sending.delete(sending));
    this.sending.add(sending);
    return sending;
  }

  /** Resolves once every send in flight settled. */
  async drain(): Promise<void> {
    await Promise.all([...this.sending]);
  }
}

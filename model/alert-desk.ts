/**
 * Where the model's alerts go, and what reached a person. Two kinds of alerter: a recording one
 * (an alerter function that records what it took, and rejects while "down"), and the real
 * `EmailAlerter` with a rate limit, sending to a real SMTP server on loopback (which refuses every
 * message while "down"). For email, an alert reached a person only if a mail arrived that carries
 * it: its id (the `Message-ID`, or named in a digest's text), or its key and attempt.
 */
import { EmailAlerter } from '../src/alert/email';
import type { AlertEvent, Alerter } from '../src/types';
import type { TestSmtpServer } from '../test/support/smtp';
import { never } from './store-faults';

/** Which alerter a sequence runs with. */
export type AlerterKind = 'record' | 'email';

/** The rate limit of every `EmailAlerter` the model builds: one alert a minute per process. */
export const EMAIL_RATE_LIMIT = Object.freeze({ max: 1, perMs: 60_000 });

/** The alerts of one sequence. */
export class AlertDesk {
  /** Every event an alerter was given, in order (sent or not). */
  readonly given: AlertEvent[] = [];
  /** Events the recording alerter took. */
  private readonly taken: AlertEvent[] = [];
  private up = true;
  private readonly mailsBefore: number;
  private readonly emailers: EmailAlerter[] = [];

  constructor(readonly kind: AlerterKind, private readonly smtp: TestSmtpServer | undefined, private readonly clock: () => number) {
    if (kind === 'email' && !smtp) throw new Error('the email alerter needs the SMTP server');
    this.mailsBefore = smtp?.messages.length ?? 0;
    if (smtp) smtp.mode = 'accept';
  }

  /** The alerter is down (the recording one rejects; the SMTP server refuses every message) or up. */
  setUp(up: boolean): void {
    this.up = up;
    if (this.kind === 'email') this.smtp!.mode = up ? 'accept' : 'refuse-data';
  }

  /** A new alerter for one instance (a process: its own rate limit); silent once `dead()` says so. */
  alerterFor(dead: () => boolean): Alerter {
    if (this.kind === 'record') {
      return async (event) => {
        if (dead()) return never();
        this.given.push(event);
        if (!this.up) throw new Error('model: the alerter is down');
        this.taken.push(event);
      };
    }
    const email = new EmailAlerter({
      transport: this.smtp!.transportOptions(), to: 'ops@example.com', from: 'locker@example.com',
      rateLimit: { ...EMAIL_RATE_LIMIT }, clock: this.clock,
    });
    this.emailers.push(email);
    return {
      send: async (event) => {
        if (dead()) return never();
        this.given.push(event);
        await email.send(event);
        if (dead()) return never();
      },
    };
  }

  /** The alerts that reached a person. */
  received(): AlertEvent[] {
    if (this.kind === 'record') return [...this.taken];
    const mails = this.smtp!.messages.slice(this.mailsBefore).map((m) => m.raw);
    return this.given.filter((e) => mails.some((raw) => raw.includes(e.id) || (e.previousAttempt !== undefined && raw.includes(e.previousAttempt) && raw.includes(e.keyPath))));
  }

  /** Closes the email alerters' transports. */
  async close(): Promise<void> {
    await Promise.all(this.emailers.map((e) => e.shutdown()));
  }
}

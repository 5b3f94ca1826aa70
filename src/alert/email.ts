/**
 * The email alerter: tells a person, through any nodemailer transport, that a stale lease was
 * overwritten or that a step failed for good. It redacts the entity's properties, keeps to a
 * per-process rate limit, and rejects when a send fails (the Locker logs that; it never retries).
 */
import nodemailer from 'nodemailer';
import type { Transport, TransportConfig, Transporter } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import { dropUndefined } from '../config/drop-undefined';
import { errorMessage } from '../errors/error-text';
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { AlertEvent } from '../types';
import { formatAlert } from './message';
import { RateLimiter, type RateLimitOptions } from './rate-limit';
import { isRedaction, redactProperties, scrub, type Redaction } from './redact';

/** Options of `EmailAlerter`. */
export interface EmailAlerterOptions {
  /**
   * How mail leaves: a nodemailer `Transporter` you created (SMTP, SES, sendmail, JSON, stream;
   * you close it), or what `nodemailer.createTransport` takes (transport options, a connection
   * URL, a transport plug-in): then the alerter creates the transporter, bounds the SMTP timeouts
   * you left unset (see `SMTP_TIMEOUT_DEFAULTS`), and `shutdown()` closes it.
   */
  transport: Transporter | TransportConfig | Transport | string;
  /** Who is told: one address or several (a string may list several, comma-separated). */
  to: string | readonly string[];
  /** The sender address. */
  from: string;
  /** Put before every subject. Defaults to `[datastore-locker]`. */
  subjectPrefix?: string;
  /**
   * Property names whose values are shown as `[redacted]` (at any depth), or a function
   * `(name, value) => replacement` (return `value` to keep it). Redacted strings are also scrubbed
   * from the error text. Key paths are never redacted. Defaults to redacting nothing.
   */
  redact?: Redaction;
  /**
   * At most `max` alerts per `perMs` in this process. One more is held back: `send()` rejects, so
   * it stays owed on its entity and the sweep sends it again in a later window. Defaults to 10 per 60 s.
   */
  rateLimit?: RateLimitOptions;
  /** The clock of the rate limit, in epoch milliseconds. Defaults to `Date.now`. */
  clock?: () => number;
}

/** Every default, in one place. */
const DEFAULTS = Object.freeze({
  subjectPrefix: '[datastore-locker]',
  redact: Object.freeze([]) as Redaction,
  rateLimit: Object.freeze({ max: 10, perMs: 60_000 }),
  clock: Date.now,
});

/**
 * SMTP timeouts (ms) the alerter sets on a transport it creates, unless the options set them:
 * nodemailer's own defaults would let one send hang for up to ten minutes.
 */
export const SMTP_TIMEOUT_DEFAULTS = Object.freeze({
  connectionTimeout: 10_000,
  greetingTimeout: 10_000,
  socketTimeout: 10_000,
  dnsTimeout: 10_000,
});

/** Every option name of {@link EmailAlerterOptions}. */
const OPTION_NAMES: OptionNames<EmailAlerterOptions> = {
  transport: true, to: true, from: true, subjectPrefix: true, redact: true, rateLimit: true, clock: true,
};

/** Keys of transport options that select a transport other than SMTP. */
const NON_SMTP_KEYS = ['jsonTransport', 'streamTransport', 'sendmail', 'SES'];

/** The parsed, complete configuration. */
interface Config {
  transporter: Transporter;
  /** Whether the alerter created the transporter, and so closes it. */
  owned: boolean;
  to: string[];
  from: string;
  subjectPrefix: string;
  redact: Redaction;
  limiter: RateLimiter;
}

/** The transporter to use, and whether the alerter owns (and so closes) it. */
type TransportChoice = Pick<Config, 'transporter' | 'owned'>;

/** An alert held back by `EmailAlerter`'s rate limit: it was not sent, and stays owed (the sweep sends it again). */
export class RateLimitedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RateLimitedError';
  }
}

/** Sends alerts by email through nodemailer. Pass it as the Locker's `alerter`. */
export class EmailAlerter {
  private readonly config: Config;
  private closed = false;

  /** @throws ConfigError when an option is missing or malformed. */
  constructor(options: EmailAlerterOptions) {
    this.config = parseOptions(options);
  }

  /** The transporter alerts go through, e.g. to `verify()` it at startup. */
  get transporter(): Transporter {
    return this.config.transporter;
  }

  /**
   * Sends one alert. Resolves once the transport accepted it. Rejects with an Error whose `cause`
   * is the transport's error when the send fails, and with a `RateLimitedError` when the rate
   * limit holds the alert back: the Locker then leaves its claim unmarked, so it stays owed and the
   * sweep sends it again, under the same id, in a later window (the next mail sent also counts the
   * alerts held back since the last one).
   */
  async send(event: AlertEvent): Promise<void> {
    if (this.closed) throw new Error('EmailAlerter: send() was called after shutdown().');
    const { limiter } = this.config;
    const decision = limiter.take();
    if (!decision.allowed) {
      throw new RateLimitedError(`EmailAlerter: rate limit of ${limiter.max} per ${limiter.perMs} ms reached; alert ${event.id} (${event.reason}, ${event.keyPath} step ${event.seq}) is held back and stays owed: the sweep sends it again`);
    }
    const message = formatAlert(this.prepare(event, decision.suppressed), this.config);
    const { transporter, from, to } = this.config;
    try {
      await transporter.sendMail({ from, to, subject: message.subject, text: message.text, html: message.html, messageId: messageId(event) });
    } catch (cause) {
      limiter.restore(decision.suppressed);
      const what = `"${message.subject}" to ${to.join(', ')}`;
      throw new Error(`EmailAlerter: could not send ${what}: ${errorMessage(cause)}`, { cause });
    }
  }

  /** Closes the transporter if the alerter created it (one you passed in is left to you). */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.config.owned) this.config.transporter.close();
  }

  /** The event as it is told: properties redacted, secrets scrubbed from the error, suppressed counted. */
  private prepare(event: AlertEvent, suppressed: number): AlertEvent {
    const { properties, secrets } = redactProperties(event.properties, this.config.redact);
    const prepared: AlertEvent = { ...event, properties, suppressed: suppressed + (event.suppressed ?? 0) };
    if (event.error) {
      const { message, stack } = event.error;
      prepared.error = { message: scrub(message, secrets) };
      if (stack !== undefined) prepared.error.stack = scrub(stack, secrets);
    }
    return prepared;
  }
}

// ---------------------------------------------------------------------------------------------
// Options

function parseOptions(options: EmailAlerterOptions): Config {
  if (typeof options !== 'object' || options === null) fail('options must be an object { transport, to, from, ... }.');
  rejectUnknownOptions('EmailAlerter', options, OPTION_NAMES);
  const given = dropUndefined(options);
  const merged = { ...DEFAULTS, ...given };
  if (typeof merged.subjectPrefix !== 'string') {
    fail(`\`subjectPrefix\` must be a string, got ${describe(merged.subjectPrefix)}.`);
  }
  if (!isRedaction(merged.redact)) {
    fail('`redact` must be an array of property names or a function (name, value) => replacement.');
  }
  if (typeof merged.clock !== 'function') fail('`clock` must be a function returning epoch milliseconds.');
  return {
    ...parseTransport(given.transport),
    to: parseRecipients(given.to),
    from: parseSender(given.from),
    subjectPrefix: merged.subjectPrefix,
    redact: merged.redact,
    limiter: createLimiter(merged.rateLimit, merged.clock),
  };
}

function createLimiter(rateLimit: RateLimitOptions, clock: () => number): RateLimiter {
  try {
    return new RateLimiter(rateLimit, clock);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
}

function parseTransport(transport: EmailAlerterOptions['transport'] | undefined): TransportChoice {
  if (typeof transport === 'string' && transport.trim() !== '') {
    return { transporter: nodemailer.createTransport({ ...SMTP_TIMEOUT_DEFAULTS, url: transport }), owned: true };
  }
  if (typeof transport !== 'object' || transport === null || Array.isArray(transport)) {
    fail(
      '`transport` must be a nodemailer Transporter (from nodemailer.createTransport) or nodemailer transport ' +
        `options such as { host, port }, got ${describe(transport)}.`,
    );
  }
  if (isTransporter(transport)) return { transporter: transport, owned: false };
  if (isTransportPlugin(transport)) return { transporter: nodemailer.createTransport(transport), owned: true };
  return { transporter: nodemailer.createTransport(withTimeouts(transport)), owned: true };
}

/** SMTP options with every timeout the user left unset bounded. */
function withTimeouts(options: TransportConfig): TransportConfig {
  if (NON_SMTP_KEYS.some((key) => key in options)) return options;
  return { ...SMTP_TIMEOUT_DEFAULTS, ...dropUndefined(options) };
}

function isTransporter(value: object): value is Transporter {
  return typeof (value as { sendMail?: unknown }).sendMail === 'function';
}

function isTransportPlugin(value: object): value is Transport {
  return typeof (value as { send?: unknown }).send === 'function';
}

function parseRecipients(to: unknown): string[] {
  const list = typeof to === 'string' ? [to] : to;
  if (!Array.isArray(list) || list.length === 0 || !list.every((entry) => typeof entry === 'string')) {
    fail(`\`to\` must be an email address or a non-empty array of them, got ${describe(to)}.`);
  }
  for (const entry of list as string[]) assertAddresses('to', entry);
  return [...(list as string[])];
}

function parseSender(from: unknown): string {
  if (typeof from !== 'string') fail(`\`from\` must be an email address, got ${describe(from)}.`);
  if (assertAddresses('from', from) !== 1) fail(`\`from\` must be a single email address, got ${describe(from)}.`);
  return from;
}

/** Checks that a header value holds only real addresses; returns how many. */
function assertAddresses(option: string, value: string): number {
  const mailboxes = addressparser(value, { flatten: true });
  const bad = mailboxes.find((mailbox) => !/^[^@\s]+@[^@\s]+$/.test(mailbox.address));
  if (mailboxes.length === 0 || bad) {
    fail(`\`${option}\` must hold email addresses such as "ops@example.com", got ${describe(value)}.`);
  }
  return mailboxes.length;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function fail(sentence: string): never {
  throw new ConfigError(`EmailAlerter: ${sentence}`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(describe).join(', ')}]`;
  return value === null || typeof value !== 'object' ? String(value) : 'an object';
}

/**
 * The message's Message-ID, from the alert's stable id: an alert sent twice (see `AlertEvent.id`)
 * is the same message to a mail client, which shows it once.
 */
function messageId(event: AlertEvent): string | undefined {
  return /^[A-Za-z0-9._-]{1,128}$/.test(event.id) ? `<${event.id}@datastore-locker>` : undefined;
}

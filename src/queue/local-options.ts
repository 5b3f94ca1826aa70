/**
 * The options of the local dispatcher, parsed once: defaults in one frozen literal, every value
 * checked, a `ConfigError` with a sentence for the first one that is wrong.
 */
import { randomBytes } from 'node:crypto';
import { dropUndefined } from '../config/drop-undefined';
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { Logger, TaskRequest } from '../types';
import { MAX_TIMER_MS, targetUrl, type BackoffPolicy } from './local-delivery';
import type { LocalSecret } from './local-signature';

/** Options of `LocalQueue`; only `baseUrl` is required. */
export interface LocalQueueOptions {
  /**
   * Where the app listens, e.g. `http://127.0.0.1:8080`; a task goes to `baseUrl + task.path`.
   * A function is asked at every attempt, for apps whose port is known only after `listen`.
   */
  baseUrl: string | (() => string);
  /** Sent in `X-CloudTasks-QueueName`. Defaults to `'local'`. */
  queueName?: string;
  /** The first retry's wait. Defaults to 100 ms (Cloud Tasks' default). */
  minBackoffMs?: number;
  /** The longest wait between attempts. Defaults to 10 s. */
  maxBackoffMs?: number;
  /** How often the wait doubles before it grows linearly. Defaults to 16 (Cloud Tasks' default). */
  maxDoublings?: number;
  /** Attempts per task, the first included; -1 for unlimited. Defaults to 100 (Cloud Tasks' default). */
  maxAttempts?: number;
  /**
   * How long an attempt may wait for the whole answer; then it is aborted and counts as failed
   * without a response. Cloud Tasks allows 15 s to 30 min; smaller values are allowed here for
   * tests. Defaults to 10 min (Cloud Tasks' default).
   */
  dispatchDeadlineMs?: number;
  /** Requests in flight at most; the rest wait in order of due time. Defaults to 10. */
  concurrency?: number;
  /**
   * How long a task name stays taken after its task was delivered or given up; while it is taken
   * (and while its task is in the queue), a task with the same name is not enqueued again and
   * `enqueue` still resolves, as Cloud Tasks' ALREADY_EXISTS counts as success. Defaults to 1 h.
   */
  dedupWindowMs?: number;
  /** The key requests are signed with (at least 16 bytes). Defaults to 32 random bytes per queue. */
  secret?: LocalSecret;
  /** Where retries and give-ups are logged. Defaults to `console`. */
  logger?: Logger;
  /** Called when a task got a 2xx answer; `attempt` is 1 on the first attempt. */
  onDelivered?(task: TaskRequest, status: number, attempt: number): void;
  /** Called when a task used up `maxAttempts`; `lastStatus` is undefined when the last attempt got no answer. */
  onGiveUp?(task: TaskRequest, lastStatus: number | undefined): void;
}

/** The complete configuration the queue works with. */
export interface LocalQueueConfig extends BackoffPolicy {
  baseUrl: () => string;
  queueName: string;
  maxAttempts: number;
  dispatchDeadlineMs: number;
  concurrency: number;
  dedupWindowMs: number;
  secret: LocalSecret;
  logger: Logger;
  onDelivered?: LocalQueueOptions['onDelivered'];
  onGiveUp?: LocalQueueOptions['onGiveUp'];
}

type Defaulted =
  | 'queueName'
  | 'minBackoffMs'
  | 'maxBackoffMs'
  | 'maxDoublings'
  | 'maxAttempts'
  | 'dispatchDeadlineMs'
  | 'concurrency'
  | 'dedupWindowMs';

const DEFAULTS: Readonly<Required<Pick<LocalQueueOptions, Defaulted>>> = Object.freeze({
  queueName: 'local',
  minBackoffMs: 100,
  maxBackoffMs: 10_000,
  maxDoublings: 16,
  maxAttempts: 100,
  dispatchDeadlineMs: 600_000,
  concurrency: 10,
  dedupWindowMs: 3_600_000,
});

/** Every option name of {@link LocalQueueOptions}. */
const OPTION_NAMES: OptionNames<LocalQueueOptions> = {
  baseUrl: true, queueName: true, minBackoffMs: true, maxBackoffMs: true, maxDoublings: true, maxAttempts: true,
  dispatchDeadlineMs: true, concurrency: true, dedupWindowMs: true, secret: true, logger: true, onDelivered: true, onGiveUp: true,
};

/** A Cloud Tasks queue id. */
const QUEUE_NAME = /^[A-Za-z0-9-]{1,100}$/;

/** Fills in defaults and checks every option; throws ConfigError with a sentence on what is wrong. */
export function parseOptions(options: LocalQueueOptions): LocalQueueConfig {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('LocalQueue needs an options object with at least baseUrl.');
  }
  rejectUnknownOptions('LocalQueue', options, OPTION_NAMES);
  const given = dropUndefined(options);
  const merged = { ...DEFAULTS, ...given } as typeof DEFAULTS & LocalQueueOptions;
  const config: LocalQueueConfig = {
    baseUrl: parseBaseUrl(merged.baseUrl),
    queueName: parseQueueName(merged.queueName),
    minBackoffMs: count('minBackoffMs', merged.minBackoffMs, 0),
    maxBackoffMs: count('maxBackoffMs', merged.maxBackoffMs, 0),
    maxDoublings: count('maxDoublings', merged.maxDoublings, 0),
    maxAttempts: merged.maxAttempts === -1 ? -1 : count('maxAttempts', merged.maxAttempts, 1),
    dispatchDeadlineMs: count('dispatchDeadlineMs', merged.dispatchDeadlineMs, 1),
    concurrency: count('concurrency', merged.concurrency, 1),
    dedupWindowMs: count('dedupWindowMs', merged.dedupWindowMs, 0),
    secret: parseSecret(merged.secret),
    logger: parseLogger(merged.logger),
    onDelivered: hook('onDelivered', merged.onDelivered),
    onGiveUp: hook('onGiveUp', merged.onGiveUp),
  };
  if (config.maxBackoffMs < config.minBackoffMs) {
    throw new ConfigError('LocalQueue option maxBackoffMs must not be less than minBackoffMs.');
  }
  if (config.dispatchDeadlineMs > MAX_TIMER_MS) {
    throw new ConfigError(`LocalQueue option dispatchDeadlineMs must be at most ${MAX_TIMER_MS} ms.`);
  }
  return config;
}

function parseBaseUrl(baseUrl: unknown): () => string {
  if (typeof baseUrl === 'function') return () => String(baseUrl());
  const wrong =
    'LocalQueue option baseUrl must be an http or https URL such as http://127.0.0.1:8080, or a function returning one; ' +
    `got ${JSON.stringify(baseUrl)}.`;
  if (typeof baseUrl !== 'string') throw new ConfigError(wrong);
  try {
    targetUrl(baseUrl, '/');
  } catch {
    throw new ConfigError(wrong);
  }
  return () => baseUrl;
}

function parseQueueName(name: unknown): string {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    throw new ConfigError('LocalQueue option queueName must be 1 to 100 letters, digits or hyphens, like a Cloud Tasks queue id.');
  }
  return name;
}

/** A whole number of at least `min`. */
function count(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new ConfigError(`LocalQueue option ${name} must be a whole number of at least ${min}; got ${String(value)}.`);
  }
  return value;
}

function parseSecret(secret: unknown): LocalSecret {
  if (secret === undefined) return randomBytes(32);
  const bytes = typeof secret === 'string' ? Buffer.byteLength(secret) : secret instanceof Uint8Array ? secret.length : -1;
  if (bytes < 16) throw new ConfigError('LocalQueue option secret must be a string or bytes, at least 16 bytes long.');
  return secret as LocalSecret;
}

function parseLogger(logger: unknown): Logger {
  if (logger === undefined) return console;
  const methods = logger as Partial<Record<keyof Logger, unknown>> | null;
  const levels = ['info', 'warn', 'error'] as const;
  const complete = typeof methods === 'object' && methods !== null && levels.every((level) => typeof methods[level] === 'function');
  if (!complete) throw new ConfigError('LocalQueue option logger must have info, warn and error methods (console fits).');
  return logger as Logger;
}

function hook<T>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new ConfigError(`LocalQueue option ${name} must be a function.`);
  return value;
}

/**
 * The Locker's options: what users pass, the defaults, and the one parse that turns the first into
 * a complete, checked configuration. Nothing else in the library looks at raw options.
 */
import { dropUndefined } from './drop-undefined';
import { errorMessage } from '../errors/error-text';
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from './option-names';
import { CONTENTION_RETRY_DEFAULTS } from '../locks/retry';
import { LOG_FORMATS, platformLogger, type LogFormat } from '../log/platform-logger';
import { checkTimeLimits, DEFAULT_REQUEST_TIMEOUT, stepTimes } from './time-limits';
import type { Key } from '@google-cloud/datastore';
import type { Alerter, Authenticator, Logger, Queue, Store } from '../types';
import type { KeyedStore } from '../keys/key-type';
import { isRedaction, type Redaction } from '../alert/redact';

/**
 * Options of `new Locker(options)`. Only `store` is required. `K` is the store's key type: `Key`
 * for `DatastoreStore` and `MemoryStore`, `DocumentReference` for `FirestoreStore`.
 */
export interface LockerOptions<K = Key> {
  /**
   * Where entities live: `DatastoreStore` in production, `MemoryStore` for local runs,
   * `FirestoreStore` (`datastore-locker/firestore`) for Firestore in Native mode.
   */
  store: Store & KeyedStore<K>;
  /** Where tasks go: `CloudTasksQueue` in production, `LocalQueue` for local runs. Needed to schedule. */
  queue?: Queue;
  /** Who is told about lease overwrites and permanent failures. */
  alerter?: Alerter;
  /** Alert when a stale lease is overwritten. Defaults to true when an alerter is given. */
  alertOnOverwrite?: boolean;
  /** Alert when a step fails for good. Defaults to true when an alerter is given. */
  alertOnFailure?: boolean;
  /**
   * How long the Locker waits for the alerter before answering the task anyway, ms. At most a
   * third of `leaseDuration` (else `ConfigError`). Defaults to 5 000, or a third of
   * `leaseDuration` when that is less.
   */
  alertTimeout?: number;
  /**
   * How long a lease lasts without renewal, ms. A running handler renews it every third of this;
   * a lease not renewed for this long is stale and may be overwritten. Defaults to 60 000 (1 min).
   * On Firestore in Datastore mode keep it at least 60 000: a process killed inside a transaction
   * holds its locks until Firestore expires the transaction (60 s after its last use), and the
   * attempt that waits on them meanwhile would see a shorter lease lapse, each lapse a retry.
   */
  leaseDuration?: number;
  /**
   * The longest an attempt may run, ms: then its signal aborts and its lease is no longer renewed.
   * Defaults to 630 000 (10 min 30 s), or `requestTimeout` when that is longer, so the request's
   * limit stops a handler first.
   */
  leaseTimeout?: number;
  /**
   * The platform's request timeout for this service, ms (Cloud Run's `--timeout`: 5 min by
   * default, up to 60 min; App Engine standard: 10 min). A handler still running a margin before it
   * (a tenth, at least 1 s, at most 30 s) is stopped through `ctx.signal` (`RequestTimeoutError`)
   * and its lease handed back, and the task answered 503 before the platform cuts the request.
   * Checked against `leaseTimeout` and the queue's dispatch deadline (see
   * docs/concepts/shutdown-and-time-limits.md). Defaults to 300 000 (Cloud Run's default).
   */
  requestTimeout?: number;
  /**
   * How long a lease held by the Go library lasts, ms (a lock with `lock_req` set and no
   * `lock_state`). Go never renews its leases and judges them by its own lease timeout, so during
   * a migration such a lease is stale only after this long, not after `leaseDuration`. Set it to
   * your Go `LeaseTimeout`. Defaults to 630 000 (10 min 30 s), the Go library's default.
   */
  goLeaseTimeout?: number;
  /**
   * Attempts a step may fail before it is failed for good (the failure that brings `lock_try` to
   * this number fails the step). Keep it within the queue's `maxAttempts`. Defaults to 10.
   */
  maxRetries?: number;
  /** The status of a task refused because another attempt holds the lease. Defaults to 503. */
  lockFailedStatus?: number;
  /**
   * How requests are authenticated before the store is touched. Defaults to the queue's own
   * authenticator when it has one (`LocalQueue`: its signature); `CloudTasksQueue` has none, so
   * with it (or no queue) leaving this out throws `ConfigError`: pass `oidcAuthenticator()` for
   * HTTP targets or `appEngineAuthenticator()` on App Engine. `false` accepts every request: only
   * behind a proxy that already checked it.
   */
  authenticate?: Authenticator | false;
  /**
   * Where the Locker logs. Defaults to one JSON object per line (`severity`, `message`, fields) on
   * Cloud Run and App Engine, which Cloud Logging parses, and one readable line elsewhere (`logFormat`).
   */
  logger?: Logger;
  /** The default logger's format: `json`, `text`, or `auto` (JSON where `K_SERVICE` or `GAE_SERVICE` is set). Defaults to `auto`. */
  logFormat?: LogFormat;
  /** The clock, in epoch ms. Defaults to `Date.now`. */
  clock?: () => number;
  /** Retries of a transaction that aborts on contention. Defaults to 5 attempts, 20 ms to 1 s backoff. */
  contention?: {
    /** Runs of the transaction in all, the first included. */
    attempts?: number;
    /** Cap of the first backoff delay, ms; doubles with each retry. */
    baseDelayMs?: number;
    /** Cap of every backoff delay, ms. */
    maxDelayMs?: number;
  };
  /**
   * The `app` written into encoded keys (`X-Lock-Key`), e.g. `s~my-project`. Defaults to the
   * store's project id, else `datastore-locker` when the store knows none (logged).
   */
  keyAppId?: string;
  /** Properties of your entities to keep out of indexes when the Locker writes them. Defaults to none. */
  excludeFromIndexes?: readonly string[];
  /**
   * Property names of your entities whose values no output of the Locker shows (at any depth), or
   * a function `(name, value) => replacement`: the status page and its JSON (`locker.inspect()`)
   * show them as `[redacted]`, and their string values are scrubbed from the error messages and
   * stacks the page, the log lines, the `released` and `failed` events and the alerts carry; every
   * alerter gets the event redacted. Key paths are never redacted. Defaults to redacting nothing.
   */
  redact?: Redaction;
  /**
   * Where `locker.statusRouter()` is mounted, as an absolute URL (e.g. `https://orders.example.com/ops/locker`):
   * alerts then link to the step's page. Defaults to none (alerts carry no link).
   */
  statusUrl?: string;
  /**
   * The Google Cloud project alerts name. Defaults to the store's project id, else `GOOGLE_CLOUD_PROJECT`.
   */
  project?: string;
  /**
   * The service alerts name. Defaults to Cloud Run's `K_SERVICE` (with `K_REVISION`) or App
   * Engine's `GAE_SERVICE` (with `GAE_VERSION`), when set.
   */
  service?: string;
  /**
   * How long a live step may go without progress (no task sent, no lease taken, renewed or
   * released) before `sweep()` re-delivers it under a new task name, ms; at least `leaseDuration`,
   * so a running handler's lease is stale by then. Defaults to 300 000 (5 min) or twice
   * `leaseDuration`, whichever is longer: see docs/concepts/no-step-is-lost.md for why.
   */
  stallAfter?: number;
  /**
   * Remember the lock each entity was last seen with, so repeated duplicates of a finished or held
   * step are answered without a round trip (see `seen-steps.ts` for why that is safe; a step seen
   * failed is always read again, since `locker.retry()` revives it).
   * A refusal (a lease seen held) is answered from it for at most 1 s after the lease was seen,
   * since each refusal costs the task a Cloud Tasks attempt. Defaults to
   * `{ size: 1000, ttlMs: 10 000 }`; `false` turns it off.
   */
  duplicateCache?: {
    /** Entities remembered at most; the least recently seen is forgotten first. */
    size?: number;
    /** How long a remembered lock may answer, ms. */
    ttlMs?: number;
  } | false;
  /**
   * OpenTelemetry spans and counters for taking, running and finishing a step and for refused and
   * dropped tasks, through `@opentelemetry/api` when it is installed (an optional peer
   * dependency); they record once the application registers an SDK. Defaults to `true`; `false`
   * turns the hooks off.
   */
  telemetry?: boolean;
  /**
   * The Datastore namespace the records of schedules (`locker.recurring()`) live in. A tick stops
   * every schedule of its namespace that its code does not declare, so apps that share a database
   * each need their own. Defaults to `''`, the default namespace.
   */
  scheduleNamespace?: string;
}

/** The complete configuration the rest of the library sees. */
export interface Config {
  readonly store: Store;
  readonly queue: Queue | undefined;
  readonly alerter: Alerter | undefined;
  /** Whether overwrites are alerted: an alerter is given and `alertOnOverwrite` is not false (the rules read this, never the alerter). */
  readonly alertOnOverwrite: boolean;
  /** Whether failures for good are alerted: an alerter is given and `alertOnFailure` is not false. */
  readonly alertOnFailure: boolean;
  readonly alertTimeout: number;
  readonly leaseDuration: number;
  readonly leaseTimeout: number;
  readonly requestTimeout: number;
  /** When a running handler is stopped for the request's time limit, ms after its lease was taken (`stepTimes`). */
  readonly stepLimit: number;
  /** How long a handler stopped for the time limit has to return before its lease is given up, ms. */
  readonly stepGrace: number;
  readonly goLeaseTimeout: number;
  readonly maxRetries: number;
  readonly lockFailedStatus: number;
  readonly authenticate: Authenticator | false;
  readonly logger: Logger;
  readonly clock: () => number;
  readonly contention: { readonly attempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number };
  readonly keyAppId: string;
  readonly excludeFromIndexes: readonly string[];
  readonly redact: Redaction | undefined;
  readonly stallAfter: number;
  readonly statusUrl: string | undefined;
  readonly project: string | undefined;
  readonly service: string | undefined;
  readonly duplicateCache: { readonly size: number; readonly ttlMs: number };
  readonly telemetry: boolean;
  readonly scheduleNamespace: string;
}

/** Every option name of {@link LockerOptions}: any other key is a misspelling. */
const LOCKER_OPTION_NAMES: OptionNames<LockerOptions> = {
  store: true, queue: true, alerter: true, alertOnOverwrite: true, alertOnFailure: true, alertTimeout: true,
  leaseDuration: true, leaseTimeout: true, requestTimeout: true, goLeaseTimeout: true, maxRetries: true, lockFailedStatus: true, authenticate: true, logger: true,
  logFormat: true, clock: true, contention: true, keyAppId: true, excludeFromIndexes: true, redact: true, stallAfter: true,
  statusUrl: true, project: true, service: true, duplicateCache: true, telemetry: true, scheduleNamespace: true,
};
const CONTENTION_OPTION_NAMES: OptionNames<NonNullable<LockerOptions['contention']>> = { attempts: true, baseDelayMs: true, maxDelayMs: true };
const DUPLICATE_CACHE_OPTION_NAMES: OptionNames<Exclude<LockerOptions['duplicateCache'], false | undefined>> = { size: true, ttlMs: true };

/** Every default, in one place. */
export const DEFAULTS = Object.freeze({
  /** {@link LockerOptions.alertTimeout}, ms. */
  alertTimeout: 5_000,
  /** {@link LockerOptions.leaseDuration}, ms (1 min). */
  leaseDuration: 60_000,
  /** {@link LockerOptions.leaseTimeout}, ms (10 min 30 s). */
  leaseTimeout: 630_000,
  /** {@link LockerOptions.requestTimeout}, ms (5 min, Cloud Run's default). */
  requestTimeout: DEFAULT_REQUEST_TIMEOUT,
  /** {@link LockerOptions.goLeaseTimeout}, ms (10 min 30 s, the Go library's default LeaseTimeout). */
  goLeaseTimeout: 630_000,
  /** {@link LockerOptions.maxRetries}. */
  maxRetries: 10,
  /** {@link LockerOptions.lockFailedStatus}. */
  lockFailedStatus: 503,
  /** {@link LockerOptions.contention}: {@link CONTENTION_RETRY_DEFAULTS}. */
  contention: CONTENTION_RETRY_DEFAULTS,
  /** {@link LockerOptions.keyAppId} when the store knows no project id. */
  keyAppId: 'datastore-locker',
  /** {@link LockerOptions.stallAfter}, ms (5 min), when `2 × leaseDuration` is not longer. */
  stallAfter: 300_000,
  /** {@link LockerOptions.duplicateCache}. */
  duplicateCache: Object.freeze({
    /** Entities remembered at most. */
    size: 1_000,
    /** How long a remembered lock answers, ms. */
    ttlMs: 10_000,
  }),
  /** {@link LockerOptions.telemetry}. */
  telemetry: true,
  /** {@link LockerOptions.scheduleNamespace}: the default namespace. */
  scheduleNamespace: '',
});

/** A logger writing one readable line per message to the console. */
export const consoleLogger: Logger = platformLogger({ format: 'text' });

/** Parses user options once: fills defaults, checks every value and plug-in, and freezes the result. */
export function parseOptions(options: LockerOptions<unknown>): Config {
  if (typeof options !== 'object' || options === null) throw new ConfigError('Locker options must be an object.');
  rejectUnknownOptions('Locker', options, LOCKER_OPTION_NAMES);
  rejectUnknownOptions('Locker', options.contention, CONTENTION_OPTION_NAMES, 'contention.');
  rejectUnknownOptions('Locker', options.duplicateCache, DUPLICATE_CACHE_OPTION_NAMES, 'duplicateCache.');
  const o = dropUndefined(options);
  requireShape('store', o.store, ['transaction', 'get', 'read', 'replaceIfUnchanged', 'listDue']);
  if (o.queue !== undefined) requireShape('queue', o.queue, ['enqueue']);
  if (o.alerter !== undefined && typeof o.alerter !== 'function') requireShape('alerter', o.alerter, ['send']);
  if (o.logger !== undefined) requireShape('logger', o.logger, ['info', 'warn', 'error']);
  if (o.clock !== undefined && typeof o.clock !== 'function') throw new ConfigError('clock must be a function returning epoch milliseconds.');
  for (const flag of ['telemetry', 'alertOnOverwrite', 'alertOnFailure'] as const) {
    if (o[flag] !== undefined && typeof o[flag] !== 'boolean') throw new ConfigError(`${flag} must be true or false; got ${JSON.stringify(o[flag])}.`);
  }
  if (o.logFormat !== undefined && !LOG_FORMATS.includes(o.logFormat)) {
    throw new ConfigError(`logFormat must be one of ${LOG_FORMATS.join(', ')}; got ${JSON.stringify(o.logFormat)}.`);
  }

  const leaseDuration = positiveInteger('leaseDuration', o.leaseDuration ?? DEFAULTS.leaseDuration, 'ms');
  const requestTimeout = positiveInteger('requestTimeout', o.requestTimeout ?? DEFAULTS.requestTimeout, 'ms');
  const leaseTimeout = positiveInteger('leaseTimeout', o.leaseTimeout ?? Math.max(DEFAULTS.leaseTimeout, requestTimeout), 'ms');
  if (leaseTimeout < leaseDuration) {
    throw new ConfigError(`leaseTimeout (${leaseTimeout} ms) must not be shorter than leaseDuration (${leaseDuration} ms).`);
  }
  const maxRetries = positiveInteger('maxRetries', o.maxRetries ?? DEFAULTS.maxRetries, '');
  const lockFailedStatus = o.lockFailedStatus ?? DEFAULTS.lockFailedStatus;
  if (!Number.isInteger(lockFailedStatus) || lockFailedStatus < 400 || lockFailedStatus > 599) {
    throw new ConfigError(`lockFailedStatus must be a 4xx or 5xx status so Cloud Tasks retries the task; got ${String(lockFailedStatus)}.`);
  }
  const authenticate = resolveAuthenticator(o.authenticate, o.queue);
  const logger = o.logger ?? platformLogger({ format: o.logFormat ?? 'auto' });
  checkTimeLimits({ requestTimeout, leaseTimeout, leaseTimeoutGiven: o.leaseTimeout !== undefined, dispatchDeadline: o.queue?.dispatchDeadlineMs }, logger);
  const c = { ...DEFAULTS.contention, ...dropUndefined(o.contention ?? {}) };
  positiveInteger('contention.attempts', c.attempts, '');
  positiveInteger('contention.baseDelayMs', c.baseDelayMs, 'ms');
  positiveInteger('contention.maxDelayMs', c.maxDelayMs, 'ms');
  const excludeFromIndexes = o.excludeFromIndexes ?? [];
  if (!Array.isArray(excludeFromIndexes) || excludeFromIndexes.some((n) => typeof n !== 'string')) {
    throw new ConfigError('excludeFromIndexes must be an array of property names.');
  }
  if (o.redact !== undefined && !isRedaction(o.redact)) {
    throw new ConfigError('redact must be an array of property names or a function (name, value) => replacement.');
  }
  if (o.keyAppId !== undefined && (typeof o.keyAppId !== 'string' || o.keyAppId === '')) throw new ConfigError('keyAppId must be a non-empty string.');
  const project = optionalName('project', o.project);
  const store = o.store;
  const alertTimeout = positiveInteger('alertTimeout', o.alertTimeout ?? Math.max(1, Math.min(DEFAULTS.alertTimeout, Math.floor(leaseDuration / 3))), 'ms');
  // A step's last write waits for its takeover alert with renewal paused: a wait longer than a third
  // of the lease (the most since the last renewal is another third) could let the lease go stale.
  if (o.alerter !== undefined && alertTimeout * 3 > leaseDuration) {
    throw new ConfigError(
      `alertTimeout (${alertTimeout} ms) must be at most a third of leaseDuration (${leaseDuration} ms): a step's last write waits ` +
        'for its takeover alert with the lease unrenewed, and a hanging alerter must not let the lease go stale.',
    );
  }

  return Object.freeze({
    store: o.store,
    queue: o.queue,
    alerter: o.alerter,
    alertOnOverwrite: o.alerter !== undefined && (o.alertOnOverwrite ?? true),
    alertOnFailure: o.alerter !== undefined && (o.alertOnFailure ?? true),
    alertTimeout,
    leaseDuration,
    leaseTimeout,
    requestTimeout,
    ...stepTimes(requestTimeout),
    goLeaseTimeout: positiveInteger('goLeaseTimeout', o.goLeaseTimeout ?? DEFAULTS.goLeaseTimeout, 'ms'),
    maxRetries,
    lockFailedStatus,
    authenticate,
    logger,
    clock: o.clock ?? Date.now,
    contention: Object.freeze(c),
    // Read when used: a store whose project id is looked up after the Locker is built (see
    // lookUpProjectId) then encodes keys and names alerts with it.
    get keyAppId(): string {
      return o.keyAppId ?? store.projectId ?? DEFAULTS.keyAppId;
    },
    excludeFromIndexes: Object.freeze([...excludeFromIndexes]),
    redact: Array.isArray(o.redact) ? Object.freeze([...(o.redact as readonly string[])]) : o.redact,
    stallAfter: parseStallAfter(o.stallAfter, leaseDuration),
    statusUrl: parseStatusUrl(o.statusUrl),
    get project(): string | undefined {
      return project ?? store.projectId ?? envName('GOOGLE_CLOUD_PROJECT');
    },
    service: optionalName('service', o.service) ?? serviceFromEnv(),
    duplicateCache: parseDuplicateCache(o.duplicateCache),
    telemetry: o.telemetry ?? DEFAULTS.telemetry,
    scheduleNamespace: parseNamespace('scheduleNamespace', o.scheduleNamespace ?? DEFAULTS.scheduleNamespace),
  });
}

/**
 * Asks the store for its project id (`store.init()`) when the configuration needs it (no
 * `keyAppId` given) and the store does not know it yet, e.g. a `DatastoreStore` on
 * `new Datastore()` built without one. Resolves once it is known or the lookup failed (logged);
 * never rejects.
 */
export async function lookUpProjectId(config: Config, options: LockerOptions<unknown>): Promise<void> {
  const { store, logger } = config;
  if (options.keyAppId !== undefined || store.projectId !== undefined || !store.init) return;
  try {
    await store.init();
  } catch (error) {
    logger.warn(`the store's project id could not be looked up; X-Lock-Key carries the app id "${config.keyAppId}" (set keyAppId to choose it)`, {
      error: errorMessage(error),
    });
  }
}

function parseStatusUrl(given: unknown): string | undefined {
  if (given === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = typeof given === 'string' ? new URL(given) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new ConfigError(`statusUrl must be an absolute http(s) URL where the status router is mounted; got ${JSON.stringify(given)}.`);
  }
  return url.href.replace(/\/+$/, '');
}

function parseNamespace(name: string, given: unknown): string {
  if (typeof given !== 'string' || given.length > 100 || given.startsWith('__') || /[\u0000-\u001f]/.test(given)) {
    throw new ConfigError(`${name} must be a Datastore namespace: a string of at most 100 characters, not starting with "__"; got ${JSON.stringify(given)}.`);
  }
  return given;
}

function optionalName(name: string, given: unknown): string | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== 'string' || given.trim() === '') throw new ConfigError(`${name} must be a non-empty string.`);
  return given;
}

function envName(name: string): string | undefined {
  const value = process.env[name];
  return value ? value : undefined;
}

/** `service (revision)` on Cloud Run, `service (version)` on App Engine. */
function serviceFromEnv(): string | undefined {
  const service = envName('K_SERVICE') ?? envName('GAE_SERVICE');
  const revision = envName('K_SERVICE') ? envName('K_REVISION') : envName('GAE_VERSION');
  if (!service) return undefined;
  return revision ? `${service} (${revision})` : service;
}

function parseStallAfter(given: number | undefined, leaseDuration: number): number {
  if (given === undefined) return Math.max(DEFAULTS.stallAfter, 2 * leaseDuration);
  const stallAfter = positiveInteger('stallAfter', given, 'ms');
  if (stallAfter < leaseDuration) {
    throw new ConfigError(`stallAfter (${stallAfter} ms) must not be shorter than leaseDuration (${leaseDuration} ms): a running step would be re-delivered while its lease is fresh.`);
  }
  return stallAfter;
}

function parseDuplicateCache(given: LockerOptions['duplicateCache']): Config['duplicateCache'] {
  if (given === false) return Object.freeze({ size: 0, ttlMs: 1 });
  if (given !== undefined && (typeof given !== 'object' || given === null)) {
    throw new ConfigError('duplicateCache must be { size, ttlMs } or false.');
  }
  const c = { ...DEFAULTS.duplicateCache, ...dropUndefined(given ?? {}) };
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new ConfigError(`duplicateCache.size must be a whole number ≥ 0; got ${String(c.size)}.`);
  positiveInteger('duplicateCache.ttlMs', c.ttlMs, 'ms');
  return Object.freeze(c);
}

function resolveAuthenticator(given: Authenticator | false | undefined, queue: Queue | undefined): Authenticator | false {
  if (given === false) return false;
  if (given !== undefined) {
    if (typeof given !== 'function') throw new ConfigError('authenticate must be a function (req) => verdict, or false.');
    return given;
  }
  const fromQueue = queue?.authenticator?.();
  if (fromQueue) return fromQueue;
  throw new ConfigError(
    'No way to authenticate task requests: pass `authenticate` (e.g. oidcAuthenticator(...) for Cloud Tasks HTTP targets, ' +
      'appEngineAuthenticator() on App Engine), use a queue that signs its requests (LocalQueue), ' +
      'or pass `authenticate: false` to accept every request when a trusted proxy has checked it.',
  );
}

function positiveInteger(name: string, value: unknown, unit: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(`${name} must be a positive whole number${unit ? ` of ${unit}` : ''}; got ${String(value)}.`);
  }
  return value;
}

function requireShape(name: string, value: unknown, methods: readonly string[]): void {
  if (typeof value !== 'object' || value === null) throw new ConfigError(`${name} must be an object with ${methods.join(', ')}.`);
  const record = value as Record<string, unknown>;
  const missing = methods.filter((m) => typeof record[m] !== 'function');
  if (missing.length > 0) throw new ConfigError(`${name} is missing method${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`);
}

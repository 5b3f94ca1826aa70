/**
 * The embedded queue for local runs, tests and demos: an in-process dispatcher that delivers tasks
 * to the app over real HTTP the way Cloud Tasks delivers to an HTTP target — `X-CloudTasks-*`
 * headers, schedule times, retries of every non-2xx answer with the queue's backoff and
 * `Retry-After`, task-name de-duplication, a dispatch deadline and a concurrency limit. Requests
 * are signed with a per-queue secret (see `local-signature.ts`) that `authenticator()` checks.
 */
import { errorMessage } from '../errors/error-text';
import http from 'node:http';
import https from 'node:https';
import { QueueError } from '../errors/errors';
import type { Authenticator, Queue, QueueDepth, TaskRequest } from '../types';
import { MAX_TIMER_MS, retryDelayMs, sendAttempt, targetUrl, type AttemptOutcome } from './local-delivery';
import { parseOptions, type LocalQueueConfig, type LocalQueueOptions } from './local-options';
import { localAuthenticator, signedHeaders } from './local-signature';

export type { LocalQueueOptions } from './local-options';

/** Counts that show what the queue is doing. */
export interface LocalQueueStats {
  /** Tasks waiting for their schedule time, their retry or a free slot. */
  pending: number;
  /** Requests in flight. */
  inFlight: number;
  /** Tasks that got a 2xx answer. */
  delivered: number;
  /** Attempts that got a non-2xx answer, no answer in time, or a network error. */
  failedAttempts: number;
  /** Tasks dropped after `maxAttempts`. */
  givenUp: number;
  /** `enqueue` calls that met a task name already taken. */
  duplicates: number;
}

/** Why a task is retried, sent in `X-CloudTasks-TaskRetryReason` (this dispatcher's own words). */
export const LocalRetryReason = {
  /** The previous attempt got a non-2xx answer (its status is in `X-CloudTasks-TaskPreviousResponse`). */
  httpError: 'HTTP_ERROR',
  /** The previous attempt got no answer within the dispatch deadline. */
  deadlineExceeded: 'DEADLINE_EXCEEDED',
  /** The previous attempt could not reach the app. */
  connectionError: 'CONNECTION_ERROR',
} as const;
export type LocalRetryReason = (typeof LocalRetryReason)[keyof typeof LocalRetryReason];

/** Cloud Tasks' limits on a task. */
const MAX_TASK_BYTES = 100 * 1024;
const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 3_600_000;
const TASK_NAME = /^[A-Za-z0-9_-]{1,500}$/;
/** Task headers the dispatcher sets itself, as Cloud Tasks does. */
const RESERVED_HEADER =
  /^(x-cloudtasks-.*|x-appengine-.*|x-google-.*|x-locker-.*|host|content-length|connection|transfer-encoding|user-agent)$/i;

/** A task in the queue, between `enqueue` and its last attempt. */
interface Entry {
  readonly task: TaskRequest;
  readonly body: Buffer;
  /** Enqueue order: tasks due at the same time go first come, first served. */
  readonly order: number;
  /** When the next attempt may start (epoch ms); also sent as the task's ETA. */
  dueAt: number;
  /** Failed attempts so far. */
  retryCount: number;
  /** Attempts that got an answer. */
  executionCount: number;
  previous?: { status: number; reason: LocalRetryReason };
}

interface Running {
  cancel: AbortController;
  done: Promise<void>;
}

/**
 * A {@link Queue} that delivers tasks itself, over HTTP, to an app in the same process (or on
 * the same machine). Call `shutdown()` when done: it aborts requests in flight and stops every
 * timer; its timers never keep the process alive on their own.
 *
 * Each attempt is a POST of the task's body and headers, plus (overriding any the task sets):
 * `X-CloudTasks-QueueName`, `-TaskName`, `-TaskRetryCount` (failed attempts before this one),
 * `-TaskExecutionCount` (attempts before this one that got an answer: a deadline or network
 * error does not count), `-TaskETA` (when the attempt was due, seconds since the epoch with a
 * fraction), on retries `-TaskPreviousResponse` (the previous status, 0 when there was no
 * answer) and `-TaskRetryReason` (`HTTP_ERROR`, `DEADLINE_EXCEEDED` or `CONNECTION_ERROR`), and
 * `X-Locker-Signature`.
 */
export class LocalQueue implements Queue {
  private readonly config: LocalQueueConfig;
  private readonly agents: Record<string, http.Agent>;
  /** Tasks not in flight, sorted by due time, then enqueue order. */
  private readonly waiting: Entry[] = [];
  private readonly running = new Map<Entry, Running>();
  /** Task names taken, with when they are freed (Infinity while their task is in the queue). */
  private readonly names = new Map<string, number>();
  private readonly counts = { delivered: 0, failedAttempts: 0, givenUp: 0, duplicates: 0 };
  private idleWaiters: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private nextOrder = 0;
  private closed = false;

  constructor(options: LocalQueueOptions) {
    this.config = parseOptions(options);
    this.agents = {
      'http:': new http.Agent({ keepAlive: true }),
      'https:': new https.Agent({ keepAlive: true }),
    };
  }

  /**
   * Adds a task. Resolves at once when the task is queued, or when its name is already taken
   * (ALREADY_EXISTS counts as success). Rejects with `QueueError` after `shutdown()` or when the
   * task breaks a Cloud Tasks rule (name, size, schedule time more than 30 days ahead).
   */
  async enqueue(task: TaskRequest): Promise<void> {
    if (this.closed) throw new QueueError('The LocalQueue is shut down: it accepts no more tasks.');
    const now = Date.now();
    const body = checkTask(task, now);
    this.forgetExpiredNames(now);
    if (this.names.has(task.name)) {
      this.counts.duplicates += 1;
      return;
    }
    this.names.set(task.name, Infinity);
    const copy: TaskRequest = { ...task, headers: { ...task.headers } };
    const dueAt = task.scheduleTime?.getTime() ?? now;
    this.insert({ task: copy, body, order: this.nextOrder++, dueAt, retryCount: 0, executionCount: 0 });
    this.pump();
  }

  /**
   * The path of `baseUrl` (`/api` for `http://127.0.0.1:8080/api`), '' when it has none: task
   * requests go to it followed by the task's path. Asked of `baseUrl` each time, as each attempt
   * does; undefined while it gives no URL.
   */
  get basePath(): string | undefined {
    try {
      return new URL(this.config.baseUrl()).pathname.replace(/\/+$/, '');
    } catch {
      return undefined;
    }
  }

  /** Accepts exactly the requests this queue signed; 401 for the rest. */
  authenticator(): Authenticator {
    return localAuthenticator(this.config.secret);
  }

  /**
   * Resolves when no task is pending or in flight (at once after `shutdown()`). A task scheduled
   * far ahead keeps it waiting that long.
   */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Tasks waiting and in flight (`Queue.depth`): the status page shows them. */
  async depth(): Promise<QueueDepth> {
    return { waiting: this.waiting.length, inFlight: this.running.size };
  }

  /** What the queue holds and has done so far. */
  stats(): LocalQueueStats {
    return { pending: this.waiting.length, inFlight: this.running.size, ...this.counts };
  }

  /**
   * Stops for good: later `enqueue` calls reject, pending tasks are dropped, requests in flight are
   * aborted, every timer is cleared and idle connections are closed. Resolves once nothing runs.
   */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    this.waiting.length = 0;
    const running = [...this.running.values()];
    for (const run of running) run.cancel.abort();
    await Promise.all(running.map((run) => run.done));
    for (const agent of Object.values(this.agents)) agent.destroy();
    this.settleIdle();
  }

  /** Starts every due task a free slot allows, then arms the timer for the next one. */
  private pump(): void {
    if (this.closed) return;
    const now = Date.now();
    while (this.running.size < this.config.concurrency && this.waiting[0] !== undefined && this.waiting[0].dueAt <= now) {
      this.start(this.waiting.shift() as Entry);
    }
    this.arm(now);
    this.settleIdle();
  }

  private start(entry: Entry): void {
    const cancel = new AbortController();
    const done = this.attempt(entry, cancel.signal)
      .then((outcome) => this.settle(entry, outcome))
      .catch((err: unknown) => {
        this.config.logger.error('LocalQueue failed to settle an attempt', { task: entry.task.name, error: String(err) });
      })
      .finally(() => {
        this.running.delete(entry);
        this.pump();
      });
    this.running.set(entry, { cancel, done });
  }

  private attempt(entry: Entry, signal: AbortSignal): Promise<AttemptOutcome> {
    let url: URL;
    try {
      url = targetUrl(this.config.baseUrl(), entry.task.path);
    } catch (err) {
      return Promise.resolve({ kind: 'network', message: errorMessage(err) });
    }
    return sendAttempt({
      url,
      headers: this.headersFor(entry, url.pathname + url.search),
      body: entry.body,
      deadlineMs: this.config.dispatchDeadlineMs,
      agent: this.agents[url.protocol],
      signal,
    });
  }

  /** The task's own headers, then the ones Cloud Tasks sets, then the signature's (for `path`, the request's path and query). */
  private headersFor(entry: Entry, path: string): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(entry.task.headers)) {
      if (!RESERVED_HEADER.test(name)) headers[name.toLowerCase()] = value;
    }
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(entry.body.length);
    headers['user-agent'] = 'Google-Cloud-Tasks';
    headers['x-cloudtasks-queuename'] = this.config.queueName;
    headers['x-cloudtasks-taskname'] = entry.task.name;
    headers['x-cloudtasks-taskretrycount'] = String(entry.retryCount);
    headers['x-cloudtasks-taskexecutioncount'] = String(entry.executionCount);
    headers['x-cloudtasks-tasketa'] = (entry.dueAt / 1000).toFixed(6);
    if (entry.previous !== undefined) {
      headers['x-cloudtasks-taskpreviousresponse'] = String(entry.previous.status);
      headers['x-cloudtasks-taskretryreason'] = entry.previous.reason;
    }
    return { ...headers, ...signedHeaders(this.config.secret, { path, headers, body: entry.body }) };
  }

  /** Carries out what an attempt came to: done, retry later, or give up. */
  private settle(entry: Entry, outcome: AttemptOutcome): void {
    if (outcome.kind === 'cancelled') return;
    const attempt = entry.retryCount + 1;
    if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) {
      this.counts.delivered += 1;
      this.release(entry);
      this.callHook('onDelivered', () => this.config.onDelivered?.(entry.task, outcome.status, attempt));
      return;
    }
    this.counts.failedAttempts += 1;
    if (this.config.maxAttempts !== -1 && attempt >= this.config.maxAttempts) {
      this.giveUp(entry, outcome, attempt);
      return;
    }
    if (this.closed) return;
    const answered = outcome.kind === 'response';
    const wait = retryDelayMs(this.config, attempt, answered ? outcome.retryAfterMs : undefined);
    entry.retryCount = attempt;
    if (answered) entry.executionCount += 1;
    entry.previous = { status: answered ? outcome.status : 0, reason: retryReason(outcome) };
    entry.dueAt = Date.now() + wait;
    this.insert(entry);
    const fields = { task: entry.task.name, attempt, outcome: describe(outcome), retryInMs: wait };
    this.config.logger.info('LocalQueue will retry a task', fields);
  }

  private giveUp(entry: Entry, outcome: AttemptOutcome, attempts: number): void {
    this.counts.givenUp += 1;
    this.release(entry);
    const lastStatus = outcome.kind === 'response' ? outcome.status : undefined;
    this.config.logger.error('LocalQueue gave up on a task after its last attempt', {
      task: entry.task.name,
      path: entry.task.path,
      attempts,
      outcome: describe(outcome),
    });
    this.callHook('onGiveUp', () => this.config.onGiveUp?.(entry.task, lastStatus));
  }

  private callHook(name: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.config.logger.error(`LocalQueue's ${name} hook threw`, { error: String(err) });
    }
  }

  /** The task left the queue: its name stays taken for the de-duplication window. */
  private release(entry: Entry): void {
    this.names.set(entry.task.name, Date.now() + this.config.dedupWindowMs);
  }

  private forgetExpiredNames(now: number): void {
    for (const [name, until] of this.names) {
      if (until <= now) this.names.delete(name);
    }
  }

  /** Inserts in order of due time, then enqueue order. */
  private insert(entry: Entry): void {
    let low = 0;
    let high = this.waiting.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const other = this.waiting[mid];
      const before = other.dueAt < entry.dueAt || (other.dueAt === entry.dueAt && other.order < entry.order);
      if (before) low = mid + 1;
      else high = mid;
    }
    this.waiting.splice(low, 0, entry);
  }

  /** One timer, for the earliest waiting task, and only while a slot is free to run it. */
  private arm(now: number): void {
    const first = this.waiting[0];
    if (first === undefined || this.running.size >= this.config.concurrency) {
      this.clearTimer();
      return;
    }
    if (this.timer !== undefined && this.timerAt === first.dueAt) return;
    this.clearTimer();
    const delay = Math.min(Math.max(first.dueAt - now, 1), MAX_TIMER_MS);
    this.timerAt = first.dueAt;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, delay).unref();
  }

  private clearTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private isIdle(): boolean {
    return this.waiting.length === 0 && this.running.size === 0;
  }

  private settleIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function retryReason(outcome: AttemptOutcome): LocalRetryReason {
  if (outcome.kind === 'response') return LocalRetryReason.httpError;
  if (outcome.kind === 'deadline') return LocalRetryReason.deadlineExceeded;
  return LocalRetryReason.connectionError;
}

function describe(outcome: AttemptOutcome): string {
  switch (outcome.kind) {
    case 'response':
      return `HTTP ${outcome.status}`;
    case 'deadline':
      return 'no answer within the dispatch deadline';
    case 'network':
      return `network error: ${outcome.message}`;
    case 'cancelled':
      return 'cancelled by shutdown';
  }
}

/** Checks a task against Cloud Tasks' rules; returns its body as bytes. */
function checkTask(task: TaskRequest, now: number): Buffer {
  const refuse = (why: string): never => {
    throw new QueueError(`The LocalQueue refused task ${JSON.stringify(task?.name)}: ${why}.`);
  };
  if (typeof task !== 'object' || task === null) refuse('a task must be an object');
  if (typeof task.name !== 'string' || !TASK_NAME.test(task.name)) {
    refuse('its name must be 1 to 500 letters, digits, hyphens or underscores');
  }
  if (typeof task.path !== 'string' || !/^\/\S*$/.test(task.path)) refuse('its path must start with "/" and contain no spaces');
  if (typeof task.body !== 'string') refuse('its body must be a string');
  if (typeof task.headers !== 'object' || task.headers === null) refuse('its headers must be an object');
  const size = Buffer.byteLength(task.body) + headersSize(task.headers, refuse);
  if (size > MAX_TASK_BYTES) refuse(`it is ${size} bytes, more than Cloud Tasks' limit of ${MAX_TASK_BYTES}`);
  const at = task.scheduleTime;
  if (at !== undefined && (!(at instanceof Date) || Number.isNaN(at.getTime()))) refuse('its scheduleTime must be a valid Date');
  if (at !== undefined && at.getTime() - now > MAX_SCHEDULE_AHEAD_MS) refuse('its scheduleTime is more than 30 days ahead');
  return Buffer.from(task.body);
}

/** The bytes of a task's headers, each checked as Node would check it when sending. */
function headersSize(headers: Record<string, string>, refuse: (why: string) => never): number {
  let size = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') refuse(`header ${JSON.stringify(name)} must be a string`);
    try {
      http.validateHeaderName(name);
      http.validateHeaderValue(name, value);
    } catch (err) {
      refuse(`header ${JSON.stringify(name)} is invalid (${(err as Error).message})`);
    }
    size += Buffer.byteLength(name) + Buffer.byteLength(value);
  }
  return size;
}

/**
 * The production queue: creates named tasks in a Google Cloud Tasks queue (v2 API) through an
 * injected `CloudTasksClient`, for HTTP targets (optionally with an OIDC token) or App Engine
 * targets.
 */
import type { CloudTasksClient, protos } from '@google-cloud/tasks';
import { dropUndefined } from '../config/drop-undefined';
import { ConfigError, QueueError } from '../errors/errors';
import { describeGrpcError, grpcCode } from '../errors/grpc-status';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { Queue, TaskRequest } from '../types';
import { DEFAULT_DISPATCH_DEADLINE } from '../config/time-limits';

type ITask = protos.google.cloud.tasks.v2.ITask;

/** Deliver tasks as HTTP requests to any URL (Cloud Run, GKE, App Engine by URL...). */
export interface HttpTarget {
  /** An HTTP target: any URL (Cloud Run, GKE, elsewhere). */
  type: 'http';
  /** Base URL, e.g. `https://app.example.com`; the task's path is appended to it. */
  url: string;
  /** Have Cloud Tasks attach an OIDC token (checked by the HTTP authenticator). */
  oidc?: {
    /** The service account whose identity signs the token. */
    serviceAccountEmail: string;
    /** The token's audience. Defaults to `url`, as given. */
    audience?: string;
  };
}

/** Deliver tasks to an App Engine service of the queue's project; the task's path is the relative URI. */
export interface AppEngineTarget {
  /** An App Engine target: a service of the queue's own App Engine app. */
  type: 'appengine';
  /** The service. Defaults to the one App Engine routes to by default. */
  service?: string;
  /** The version. Defaults to the one App Engine routes to by default. */
  version?: string;
  /** The instance. Defaults to any instance App Engine picks. */
  instance?: string;
}

/** Where Cloud Tasks delivers a queue's tasks. */
export type CloudTasksTarget = HttpTarget | AppEngineTarget;

/** Options of {@link CloudTasksQueue}. */
export interface CloudTasksQueueOptions {
  /**
   * The client tasks are created with (v2 API). The caller owns it and closes it. Typed by the two
   * methods used, so a client imported as an ES module fits too: `@google-cloud/tasks` ships
   * separate ES module and CommonJS declarations, and their classes are not interchangeable.
   */
  client: Pick<CloudTasksClient, 'createTask' | 'queuePath'>;
  /** The Google Cloud project that owns the queue. */
  project: string;
  /** The queue's location, e.g. `europe-west1`. */
  location: string;
  /** The queue's id, e.g. `locker`. */
  queue: string;
  /** Where tasks are delivered. */
  target: CloudTasksTarget;
  /**
   * How long Cloud Tasks waits for the handler's answer: 15 s to 30 min for HTTP targets, 15 s to
   * 24 h for App Engine targets. Defaults to Cloud Tasks' own default (10 min).
   */
  dispatchDeadlineMs?: number;
  /** Timeout of one CreateTask call. Defaults to 10 s. */
  callTimeoutMs?: number;
  /**
   * CreateTask calls made for one task when the service is UNAVAILABLE or a call times out, with
   * jittered backoff (0.1 s doubling, at most 2 s) in between; an enqueue so takes at most about
   * `createAttempts × callTimeoutMs`. Not the queue's own `maxAttempts` (deliveries of a task),
   * which is set on the queue in Cloud Tasks. Defaults to 4.
   */
  createAttempts?: number;
}

const DEFAULTS = Object.freeze({ callTimeoutMs: 10_000, createAttempts: 4 });

/** Every option name of {@link CloudTasksQueueOptions} and of its targets. */
const OPTION_NAMES: OptionNames<CloudTasksQueueOptions> = {
  client: true, project: true, location: true, queue: true, target: true, dispatchDeadlineMs: true, callTimeoutMs: true, createAttempts: true,
};
const HTTP_TARGET_NAMES: OptionNames<HttpTarget> = { type: true, url: true, oidc: true };
const OIDC_NAMES: OptionNames<NonNullable<HttpTarget['oidc']>> = { serviceAccountEmail: true, audience: true };
const APP_ENGINE_TARGET_NAMES: OptionNames<AppEngineTarget> = { type: true, service: true, version: true, instance: true };

const ALREADY_EXISTS = 6;
const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

/** Cloud Tasks task ids: letters, digits, hyphens and underscores, at most 500 characters. */
const TASK_ID = /^[A-Za-z0-9_-]{1,500}$/;
const QUEUE_ID = /^[A-Za-z0-9-]{1,100}$/;
const LOCATION_ID = /^[a-z0-9-]{1,63}$/;
const SECOND = 1000;
const DISPATCH_DEADLINE_MIN = 15 * SECOND;
const DISPATCH_DEADLINE_MAX = { http: 30 * 60 * SECOND, appengine: 24 * 60 * 60 * SECOND };

/** What {@link CloudTasksQueue} passes as gax call options: bounded timeout and retries. */
interface BoundedCallOptions {
  timeout: number;
  retry: {
    retryCodes: number[];
    backoffSettings: {
      maxRetries: number;
      initialRetryDelayMillis: number;
      retryDelayMultiplier: number;
      maxRetryDelayMillis: number;
      initialRpcTimeoutMillis: number;
      rpcTimeoutMultiplier: number;
      maxRpcTimeoutMillis: number;
    };
  };
}

/** Creates tasks in a Cloud Tasks queue; a task that already exists under its name counts as created. */
export class CloudTasksQueue implements Queue {
  private readonly client: Pick<CloudTasksClient, 'createTask' | 'queuePath'>;
  private readonly target: CloudTasksTarget;
  private readonly queuePath: string;
  /** How long Cloud Tasks waits for an answer, ms: the option given, else Cloud Tasks' default (10 min). */
  readonly dispatchDeadlineMs: number;
  private readonly givenDispatchDeadlineMs: number | undefined;
  private readonly callTimeoutMs: number;
  private readonly createAttempts: number;
  /** The path of an HTTP target's URL (`/api` for `https://app.example.com/api`), '' for none and for App Engine targets. */
  readonly basePath: string;

  constructor(options: CloudTasksQueueOptions) {
    checkOptions(options);
    this.client = options.client;
    this.target = options.target;
    this.queuePath = options.client.queuePath(options.project, options.location, options.queue);
    this.givenDispatchDeadlineMs = options.dispatchDeadlineMs;
    this.dispatchDeadlineMs = options.dispatchDeadlineMs ?? DEFAULT_DISPATCH_DEADLINE;
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULTS.callTimeoutMs;
    this.createAttempts = options.createAttempts ?? DEFAULTS.createAttempts;
    this.basePath = options.target.type === 'http' ? urlPath(options.target.url) : '';
  }

  /** Creates the task; resolves when it exists, rejects with `QueueError` otherwise. */
  async enqueue(task: TaskRequest): Promise<void> {
    const request = { parent: this.queuePath, task: this.buildTask(task) };
    try {
      await this.client.createTask(request, this.callOptions());
    } catch (err) {
      if (grpcCode(err) === ALREADY_EXISTS) return;
      throw new QueueError(`Cloud Tasks did not create task "${task.name}": ${describeGrpcError(err)}`, { cause: err });
    }
  }

  /** The Cloud Tasks task for a request; throws `QueueError` for a request Cloud Tasks would refuse. */
  private buildTask(task: TaskRequest): ITask {
    checkTask(task);
    const headers = { ...withoutContentType(task.headers), 'Content-Type': 'application/json' };
    const body = Buffer.from(task.body, 'utf8');
    const built: ITask = { name: `${this.queuePath}/tasks/${task.name}` };
    if (this.target.type === 'http') {
      built.httpRequest = { url: joinUrl(this.target.url, task.path), httpMethod: 'POST', headers, body };
      if (this.target.oidc) {
        const { serviceAccountEmail, audience = this.target.url } = this.target.oidc;
        built.httpRequest.oidcToken = { serviceAccountEmail, audience };
      }
    } else {
      const { service, version, instance } = this.target;
      built.appEngineHttpRequest = {
        httpMethod: 'POST',
        relativeUri: task.path,
        headers,
        body,
        appEngineRouting: dropUndefined({ service, version, instance }),
      };
    }
    if (task.scheduleTime) built.scheduleTime = toTimestamp(task.scheduleTime);
    if (this.givenDispatchDeadlineMs !== undefined) built.dispatchDeadline = toDuration(this.givenDispatchDeadlineMs);
    return built;
  }

  /**
   * Bounded call options, built fresh per call (gax mutates them). CreateTask is not idempotent
   * in general, but a named task is: a retry of a call that did succeed meets ALREADY_EXISTS.
   */
  private callOptions(): BoundedCallOptions {
    return {
      timeout: this.callTimeoutMs,
      retry: {
        retryCodes: [UNAVAILABLE, DEADLINE_EXCEEDED],
        backoffSettings: {
          maxRetries: this.createAttempts,
          initialRetryDelayMillis: 100,
          retryDelayMultiplier: 2,
          maxRetryDelayMillis: 2_000,
          initialRpcTimeoutMillis: this.callTimeoutMs,
          rpcTimeoutMultiplier: 1,
          maxRpcTimeoutMillis: this.callTimeoutMs,
        },
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Validation

function checkOptions(options: CloudTasksQueueOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('CloudTasksQueue needs an options object.');
  }
  rejectUnknownOptions('CloudTasksQueue', options, OPTION_NAMES);
  const { client } = options;
  if (typeof client?.createTask !== 'function' || typeof client.queuePath !== 'function') {
    throw new ConfigError('CloudTasksQueue: `client` must be a CloudTasksClient from @google-cloud/tasks (v2).');
  }
  if (typeof options.project !== 'string' || options.project === '' || options.project.includes('/')) {
    throw new ConfigError('CloudTasksQueue: `project` must be a project id, e.g. "my-project".');
  }
  checkId('location', options.location, LOCATION_ID, 'a location id, e.g. "europe-west1"');
  checkId('queue', options.queue, QUEUE_ID, 'a queue id of letters, digits and hyphens (at most 100)');
  checkTarget(options.target);
  if (options.dispatchDeadlineMs !== undefined) checkDispatchDeadline(options.dispatchDeadlineMs, options.target.type);
  checkPositiveInteger('callTimeoutMs', options.callTimeoutMs);
  checkPositiveInteger('createAttempts', options.createAttempts);
}

function checkId(field: string, value: unknown, pattern: RegExp, what: string): void {
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new ConfigError(`CloudTasksQueue: \`${field}\` must be ${what}; got ${JSON.stringify(value)}.`);
  }
}

function checkTarget(target: CloudTasksTarget): void {
  if (target?.type === 'http') return checkHttpTarget(target);
  if (target?.type === 'appengine') {
    rejectUnknownOptions('CloudTasksQueue', target, APP_ENGINE_TARGET_NAMES, 'target.');
    for (const field of ['service', 'version', 'instance'] as const) {
      const value: unknown = target[field];
      if (value !== undefined && (typeof value !== 'string' || value === '')) {
        throw new ConfigError(`CloudTasksQueue: \`target.${field}\` must be a non-empty string when given.`);
      }
    }
    return;
  }
  throw new ConfigError("CloudTasksQueue: `target.type` must be 'http' or 'appengine'.");
}

function checkHttpTarget(target: HttpTarget): void {
  rejectUnknownOptions('CloudTasksQueue', target, HTTP_TARGET_NAMES, 'target.');
  rejectUnknownOptions('CloudTasksQueue', target.oidc, OIDC_NAMES, 'target.oidc.');
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    throw new ConfigError(`CloudTasksQueue: \`target.url\` must be an absolute URL; got ${JSON.stringify(target.url)}.`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(`CloudTasksQueue: \`target.url\` must be an http(s) URL; got ${JSON.stringify(target.url)}.`);
  }
  if (url.search !== '' || url.hash !== '' || target.url.includes('?') || target.url.includes('#')) {
    throw new ConfigError('CloudTasksQueue: `target.url` is a base URL the task path is appended to; it may not have a query or fragment.');
  }
  const { oidc } = target;
  if (oidc === undefined) return;
  if (typeof oidc.serviceAccountEmail !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(oidc.serviceAccountEmail)) {
    throw new ConfigError('CloudTasksQueue: `target.oidc.serviceAccountEmail` must be a service account email.');
  }
  if (oidc.audience !== undefined && (typeof oidc.audience !== 'string' || oidc.audience === '')) {
    throw new ConfigError('CloudTasksQueue: `target.oidc.audience` must be a non-empty string when given.');
  }
}

function checkDispatchDeadline(ms: number, type: CloudTasksTarget['type']): void {
  const max = DISPATCH_DEADLINE_MAX[type];
  if (!Number.isInteger(ms) || ms < DISPATCH_DEADLINE_MIN || ms > max) {
    throw new ConfigError(
      `CloudTasksQueue: \`dispatchDeadlineMs\` must be a whole number of milliseconds from ${DISPATCH_DEADLINE_MIN} (15 s) ` +
        `to ${max} (${type === 'http' ? '30 min' : '24 h'}) for ${type} targets; got ${ms}.`,
    );
  }
}

function checkPositiveInteger(field: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
    throw new ConfigError(`CloudTasksQueue: \`${field}\` must be a positive integer; got ${value}.`);
  }
}

function checkTask(task: TaskRequest): void {
  if (typeof task.name !== 'string' || !TASK_ID.test(task.name)) {
    throw new QueueError(
      `Invalid task name ${JSON.stringify(task.name)}: Cloud Tasks allows letters, digits, hyphens and underscores, at most 500.`,
    );
  }
  if (typeof task.path !== 'string' || !task.path.startsWith('/')) {
    throw new QueueError(`Task "${task.name}": the path must start with "/"; got ${JSON.stringify(task.path)}.`);
  }
  if (task.scheduleTime !== undefined && Number.isNaN(task.scheduleTime.getTime())) {
    throw new QueueError(`Task "${task.name}": the schedule time is an invalid Date.`);
  }
}

// ---------------------------------------------------------------------------------------------
// Conversions

/** The path of a base URL, trailing slashes dropped: what a task's path is appended to. */
function urlPath(base: string): string {
  return new URL(base).pathname.replace(/\/+$/, '');
}

/** The base URL (trailing slashes dropped) followed by the path. */
function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}

function withoutContentType(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-type'));
}

/** A protobuf Timestamp: whole seconds since the epoch and the nanoseconds past them. */
function toTimestamp(date: Date): { seconds: number; nanos: number } {
  const ms = date.getTime();
  const seconds = Math.floor(ms / SECOND);
  return { seconds, nanos: (ms - seconds * SECOND) * 1_000_000 };
}

/** A protobuf Duration of a non-negative number of milliseconds. */
function toDuration(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / SECOND), nanos: (ms % SECOND) * 1_000_000 };
}

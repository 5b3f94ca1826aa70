/**
 * A small app for middleware tests: a Locker on a given store, one `handle()` route whose handler
 * does what each test tells it, and helpers to send task requests with supertest.
 */
import express, { type Express } from 'express';
import request from 'supertest';
import { Datastore, type Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import type { LockerOptions } from '../../src/config/options';
import type { TaskContext } from '../../src/step/handler-types';
import type { AlertEvent, Authenticator, Logger, Properties, Store } from '../../src/types';
import type { LockerEvents } from '../../src/events/events';

/** Keys are built without a connection. */
export const keys = new Datastore({ projectId: 'locker-test' });

/** The test authenticator: a shared token in a header. */
export const TEST_TOKEN = 'let-me-in';
export const testAuth: Authenticator = (req) =>
  req.headers['x-test-auth'] === TEST_TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no test token' };

export class Counter {
  count: number;
  label: string;
  constructor(props: Properties) {
    this.count = typeof props.count === 'number' ? props.count : 0;
    this.label = typeof props.label === 'string' ? props.label : '';
  }
}

/** Collects log lines so tests can assert that bad input was logged. */
export class MemoryLogger implements Logger {
  readonly lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  info(message: string, fields?: Record<string, unknown>): void { this.lines.push({ level: 'info', message, fields }); }
  warn(message: string, fields?: Record<string, unknown>): void { this.lines.push({ level: 'warn', message, fields }); }
  error(message: string, fields?: Record<string, unknown>): void { this.lines.push({ level: 'error', message, fields }); }
  has(text: string): boolean { return this.lines.some((l) => l.message.includes(text)); }
}

export type Behaviour = (ctx: TaskContext<Counter>) => Promise<void> | void;

export interface TaskApp {
  app: Express;
  locker: Locker;
  logger: MemoryLogger;
  alerts: AlertEvent[];
  /** Every handler run: the key path and step. */
  runs: Array<{ key: string; seq: number; attempt: string }>;
  /** What the handler does next (default: nothing, which completes the step). */
  behave(fn: Behaviour): void;
  events: Array<{ name: keyof LockerEvents; seq: number }>;
  send(key: Key | string, seq: number | string, body?: unknown, headers?: Record<string, string>): request.Test;
}

export function taskApp(store: Store, options: Partial<LockerOptions> = {}, expressFactory: () => Express = express): TaskApp {
  const logger = new MemoryLogger();
  const alerts: AlertEvent[] = [];
  const locker = new Locker({
    store, authenticate: testAuth, logger, leaseDuration: 60_000, maxRetries: 3,
    alerter: (e) => { alerts.push(e); }, ...options,
  });
  const runs: TaskApp['runs'] = [];
  const events: TaskApp['events'] = [];
  for (const name of ['acquired', 'refused', 'dropped', 'overwritten', 'lost', 'timedOut', 'released', 'failed', 'completed', 'scheduled'] as const) {
    locker.on(name, (e: { seq: number }) => events.push({ name, seq: e.seq }));
  }
  let behaviour: Behaviour = () => {};
  const app = expressFactory();
  app.post('/task', locker.handle<Counter>(async (ctx) => {
    runs.push({ key: ctx.key.path.join('/'), seq: ctx.seq, attempt: ctx.attempt });
    await behaviour(ctx);
  }, (props) => new Counter(props)));
  return {
    app, locker, logger, alerts, runs, events,
    behave(fn) { behaviour = fn; },
    send(key, seq, body, headers = {}) {
      const req = request(app).post('/task').set('x-test-auth', TEST_TOKEN)
        .set('x-lock-key', typeof key === 'string' ? key : locker.encodeKey(key)).set('x-lock-seq', String(seq));
      for (const [name, value] of Object.entries(headers)) req.set(name, value);
      return body === undefined ? req : req.set('content-type', 'application/json').send(JSON.stringify(body));
    },
  };
}

/**
 * A rig for recurring work on a real store: Lockers ("instances") sharing one store, one schedule
 * namespace and one fake clock, whose queue keeps the tasks the ticks create, and an Express app
 * that runs each kept task's step when the test delivers it. A run's handler records the tick it
 * ran for and can be held open (its chain stays live) until the test lets it go.
 */
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import type { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import type { LockerOptions } from '../../src/config/options';
import type { Store, TaskRequest } from '../../src/types';
import { KeptTasks } from '../support/kept-tasks';
import { MemoryLogger, TEST_TOKEN, testAuth } from '../support/task-app';

/** One run as its handler saw it. */
export interface SeenRun {
  key: string;
  seq: number;
  schedule: string;
  scheduledAt: string;
}

export interface RecurringRig {
  /** The fake clock, epoch ms: set it. */
  now: number;
  readonly namespace: string;
  readonly queue: KeptTasks;
  readonly logger: MemoryLogger;
  /** Every handler run. */
  readonly runs: SeenRun[];
  /** A Locker on the shared store, queue and clock (a new "instance"). */
  instance(options?: Partial<LockerOptions>): Locker;
  /** Delivers every task not delivered yet, as Cloud Tasks would (once each), and answers their statuses. */
  deliverAll(): Promise<number[]>;
  /** Holds the handlers of runs open until `release()`. */
  hold(): void;
  release(): void;
}

export function recurringRig(store: Store, namespace: string, start: number): RecurringRig {
  const queue = new KeptTasks();
  const logger = new MemoryLogger();
  const runs: SeenRun[] = [];
  let holding: { promise: Promise<void>; release: () => void } | undefined;
  let delivered = 0;
  const rig: RecurringRig = {
    now: start,
    namespace,
    queue,
    logger,
    runs,
    instance(options = {}) {
      return new Locker({ store, queue, logger, authenticate: testAuth, clock: () => rig.now, scheduleNamespace: namespace, ...options });
    },
    async deliverAll() {
      const statuses: number[] = [];
      while (delivered < queue.tasks.length) {
        const task = queue.tasks[delivered++]!;
        statuses.push((await deliver(task)).status);
      }
      return statuses;
    },
    hold() {
      let release!: () => void;
      holding = { promise: new Promise<void>((resolve) => (release = resolve)), release };
    },
    release() {
      holding?.release();
      holding = undefined;
    },
  };
  // The app's handler runs on its own Locker (any instance would do: they share the store).
  const handlerLocker = rig.instance();
  const app = express();
  app.post('/run', handlerLocker.handle(async (ctx) => {
    const payload = ctx.payload as { schedule?: string; scheduledAt?: string } | undefined;
    runs.push({ key: ctx.key.path.join('/'), seq: ctx.seq, schedule: String(payload?.schedule), scheduledAt: String(payload?.scheduledAt) });
    if (holding) await holding.promise;
  }, (props) => props));
  const deliver = (task: TaskRequest) => request(app).post(task.path).set('x-test-auth', TEST_TOKEN).set(task.headers).set('content-type', 'application/json').send(task.body);
  return rig;
}

/** The runs of schedule `name`, as `scheduledAt` ISO strings, sorted. */
export function runsOf(rig: RecurringRig, name: string): string[] {
  return rig.runs.filter((r) => r.schedule === name).map((r) => r.scheduledAt).sort();
}

/** Asserts no (entity, seq) ran twice. */
export function assertEachStepOnce(rig: RecurringRig): void {
  const seen = new Set<string>();
  for (const r of rig.runs) {
    const id = `${r.key}#${r.seq}`;
    assert.ok(!seen.has(id), `step ${id} ran twice`);
    seen.add(id);
  }
}

/** The key of a per-tick run entity. */
export function tickKey(keys: { key(o: { namespace?: string; path: (string | number)[] }): Key }, namespace: string, name: string, at: Date): Key {
  return keys.key({ ...(namespace !== '' && { namespace }), path: ['Report', `${name}@${at.toISOString()}`] });
}

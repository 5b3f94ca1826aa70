/**
 * One instance of the service: a real `Locker` with its own Express app (the step route), its own
 * view of the shared store, its own queue client and alerter, as one process has. It can die at
 * once, at its next write, or at its next task creation (the kill points of
 * test/support/kill-points.ts): from then on every call it makes hangs, and its attempts never
 * finish. A restart is a new instance in the same slot.
 */
import express, { type Express } from 'express';
import { Locker } from '../src/locker';
import type { Logger, Queue, Store, TaskRequest } from '../src/types';
import type { AlertDesk } from './alert-desk';
import { stepHandler, ModelEntity, ROUTES, type HandlerPort } from './handler';
import { MortalStore, never } from './store-faults';
import { declareSchedules, type Declares } from './recurring';

/** Where each instance mounts the status router, whose task route runs bulk operations' pages. */
export const OPS_MOUNT = '/ops';
/** The kind of the model's entities. */
export const MODEL_KIND = 'ModelEntity';

/** The timings every instance runs with, ms. Real-time timers (renewal, proof, time limits) never fire within a sequence; the model's clock moves leases. */
export const TIMINGS = Object.freeze({ leaseDuration: 60_000, stallAfter: 120_000, alertTimeout: 5_000 });

/** How an instance dies. */
export type KillPoint = 'now' | 'next-write' | 'after-next-write' | 'next-enqueue';

/** A logger that keeps nothing (the model reads outcomes, not log lines). */
const quiet: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** What an instance needs from the sequence it runs in. */
export interface InstanceDeps {
  store: Store;
  desk: AlertDesk;
  clock: () => number;
  maxRetries: number;
  /** The Locker's `requestTimeout`, ms (real time), if the sequence sets one. */
  requestTimeout?: number;
  /** A task the instance created (the queue accepted it). */
  created(task: TaskRequest): void;
  port: HandlerPort;
  /** The instance listens for its events on its Locker. */
  listen(locker: Locker): void;
  /** The namespace of the model's entities (undefined: the default one); also the Locker's `scheduleNamespace`. */
  namespace?: string | undefined;
  /** The schedules its code declares (recurring.ts); undefined: none (the sequence leaves recurring work out). */
  declares?: Declares | undefined;
}

/** One running instance. */
export class Instance {
  readonly locker: Locker;
  readonly app: Express;
  readonly store: MortalStore;
  /** Resolves when the instance dies (never, while it lives). */
  readonly death: Promise<void>;
  private dieAtEnqueue = false;
  private markDead: () => void = () => undefined;

  /** The schedules its code declares (undefined: none). */
  readonly declares: Declares | undefined;

  constructor(readonly id: string, deps: InstanceDeps) {
    this.declares = deps.declares;
    this.death = new Promise<void>((resolve) => { this.markDead = resolve; });
    this.store = new MortalStore(deps.store, () => this.markDead());
    const queue: Queue = {
      enqueue: async (task) => {
        if (this.dieAtEnqueue) this.store.die();
        if (this.dead) return never();
        deps.created(task);
      },
    };
    this.locker = new Locker({
      store: this.store, queue, alerter: deps.desk.alerterFor(() => this.dead), authenticate: false, logger: quiet,
      clock: deps.clock, maxRetries: deps.maxRetries, ...TIMINGS, telemetry: false, scheduleNamespace: deps.namespace ?? '',
      ...(deps.requestTimeout === undefined ? {} : { requestTimeout: deps.requestTimeout }),
    });
    if (deps.declares) declareSchedules(this.locker, deps.declares, deps.namespace);
    deps.listen(this.locker);
    this.app = express();
    const handler = this.locker.handle(stepHandler(deps.port), (props) => new ModelEntity(props));
    for (const route of Object.values(ROUTES)) this.app.post(route, handler);
    // The status router, for its task route: a bulk operation's pages are steps delivered to it (`/ops/operations/step`).
    this.app.use(OPS_MOUNT, this.locker.statusRouter({ authenticate: () => ({ ok: true, principal: 'model' }), kinds: [MODEL_KIND], namespaces: [deps.namespace ?? ''] }));
  }

  get dead(): boolean {
    return this.store.isDead;
  }

  /** Forgets a death armed at the next write or task creation that has not struck yet. */
  disarm(): void {
    this.dieAtEnqueue = false;
    this.store.disarm();
  }

  /** Arms its death just after its `writes`-th write from now (a tick that dies after planning, or after its kickoff). */
  killAfterWrites(writes: number): void {
    this.store.armAfterNextWrite(writes);
  }

  /** Dies now, or arms the death at the next write or task creation. */
  kill(point: KillPoint): void {
    if (point === 'now') this.store.die();
    else if (point === 'next-write') this.store.armAtNextWrite();
    else if (point === 'after-next-write') this.store.armAfterNextWrite();
    else this.dieAtEnqueue = true;
  }
}

/**
 * The Locker: configuration plus the operations on leases and chains. `handle()` makes the
 * Express middleware that runs each Cloud Tasks step once; `schedule()` starts a chain; `sweep()`
 * re-delivers every stalled step.
 */
import { EventEmitter } from 'node:events';
import type { Key } from '@google-cloud/datastore';
import type { RequestHandler, Router } from 'express';
import type { EntityFactory, ScheduleOptions, ScheduledStep, TaskHandler } from './step/handler-types';
import type { Drain } from './step/drain';
import { ConfigError } from './errors/errors';
import type { LockerEvents } from './events/events';
import { decodeKey } from './keys/key-codec';
import { DATASTORE_KEYS, isDatastoreKeys, keyTypeOf, shownAs, type KeyType } from './keys/key-type';
import { keyedFactory, keyedHandler } from './step/keyed-context';
import { handleMiddleware, HTTP_SETTINGS, sweepMiddleware, type HandleOptions, type HttpSettings, type SweepHandlerOptions, type TaskRouteParts } from './http/middleware';
import { SweepGate } from './chain/sweep-gate';
import { lookUpProjectId, parseOptions, type Config, type LockerOptions } from './config/options';
import { settingsOf } from './config/settings';
import { ATTEMPT_SETTINGS } from './step/attempt';
import { kickoff } from './chain/next-step';
import { sweep, SWEEP_SETTINGS, type SweepParts, type SweepResult } from './chain/sweep';
import { KICKOFF_SETTINGS, scheduleMany, type KickoffSettings } from './chain/schedule-many';
import type { KickoffItem, ScheduleManyOptions, ScheduleManyResult } from './chain/schedule-many-types';
import type { SeenSteps } from './locks/seen-steps';
import type { Telemetry } from './telemetry/telemetry';
import { emitIsolated } from './events/emit';
import { INSPECT_SETTINGS, Inspector, type InspectSettings } from './ops/inspect/inspector';
import { ACTION_SETTINGS, cancelChain, resendStep, retryStep, type ActionOptions, type ActionParts, type ActionResult, type ActionSettings } from './ops/actions';
import { statusRouter } from './ops/status/router';
import { cancelFanOut, retryFanOutChildren, type CancelFanOutOptions, type FanOutActionResult, type RetryFanOutOptions } from './fanout/operator';
import type { StatusRouterOptions } from './ops/status/options';
import { FANOUT_SETTINGS, type FanParts } from './fanout/read-children';
import { buildParts, type Parts } from './parts';
import type { Json } from './types';
import type { BulkAction, BulkFilter } from './ops/bulk/filter';
import { startOperation, type BulkOptions, type BulkStarted } from './ops/bulk/start';
import { operationStep, type StepParts } from './ops/bulk/step';
import { OPERATION_KIND, OperationEntity, readOperation } from './ops/bulk/operation';
import { countTargets, type TargetCount } from './ops/bulk/targets';
import { checkBulk } from './ops/bulk/filter';
import { declare, type Declaration } from './recurring/declaration';
import { tick, type TickParts } from './recurring/tick';
import type { RecurringOptions, RecurringTick, TickResult } from './recurring/recurring-types';
import { pauseSchedule, resumeSchedule, runScheduleNow, type RunNowResult, type ScheduleOperatorParts } from './recurring/operator';

/** How long one tick may go on starting runs before it leaves the rest to the next (`locker.tick()`). */
export const TICK_BUDGET_MS = 60_000;

/** What the facade hands each of its operations: the parts, with that operation's settings and no other. */
interface Ports {
  readonly route: TaskRouteParts;
  readonly kickoff: Parts & { readonly config: KickoffSettings };
  readonly inspect: Parts & { readonly config: InspectSettings };
  readonly actions: ActionParts;
  readonly bulk: Parts & { readonly config: ActionSettings };
  readonly fan: FanParts;
  readonly sweep: SweepParts;
  readonly sweepRoute: HttpSettings;
}

/** Builds the ports once: each operation's settings are an object of their own (`config/settings.ts`). */
function buildPorts(parts: Parts, config: Config): Ports {
  return {
    route: { ...parts, config: settingsOf(config, [...HTTP_SETTINGS, ...ATTEMPT_SETTINGS]) },
    kickoff: { ...parts, config: settingsOf(config, KICKOFF_SETTINGS) },
    inspect: { ...parts, config: settingsOf(config, INSPECT_SETTINGS) },
    actions: { ...parts, config: settingsOf(config, ACTION_SETTINGS) },
    bulk: { ...parts, config: settingsOf(config, ACTION_SETTINGS) },
    fan: { ...parts, config: settingsOf(config, FANOUT_SETTINGS) },
    sweep: { ...parts, config: settingsOf(config, SWEEP_SETTINGS) },
    sweepRoute: settingsOf(config, HTTP_SETTINGS),
  };
}

/**
 * Exactly-once steps on leases held on your own Datastore entities (or Firestore documents).
 * Construct one per store and queue; `handle()` serves a step route, `schedule()` starts a chain,
 * `sweep()` re-delivers every stalled step, and the events (`locker.on(name, listener)`) feed logs
 * and counters. `K` is the store's key type, inferred from the `store` option: `Key` for
 * `DatastoreStore` and `MemoryStore`, `DocumentReference` for `FirestoreStore`
 * (`keys/key-type.ts`); the events and the `X-Lock-Key` header stay on `Key`.
 */
export class Locker<K = Key> extends EventEmitter<LockerEvents> {
  /** @internal The parsed, complete options the library's parts read. */
  readonly config: Config;
  /** @internal Resolves once the store's project id is known, or could not be (keys are encoded with it). */
  readonly ready: Promise<void>;
  /** @internal The parts this facade builds and delegates to (docs/design.md, section 15). */
  private readonly parts: Parts;
  /** The parts as each operation is handed them, with its own settings. */
  private readonly ports: Ports;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Every sweep in flight (the timer's, the sweep route's, a direct call's): `shutdown()` waits for them, within its time. */
  private readonly sweeps = new Set<Promise<unknown>>();
  private stopSweeping: () => void = () => undefined;
  private stopping: Promise<void> | undefined;
  /** One sweep at a time in this process; the route's minimum interval. */
  private readonly sweepGate: SweepGate;
  /** The schedules this code declares (`recurring()`), by name. */
  private readonly declarations = new Map<string, Declaration>();
  /** The store's key type: the public methods' keys (`K`) to the parts' `Key`s and back. */
  private readonly keys: KeyType<K>;

  /** Throws `ConfigError` with a sentence saying what is wrong when an option is invalid. */
  constructor(options: LockerOptions<K>) {
    super();
    this.config = parseOptions(options);
    this.keys = keyTypeOf(options.store);
    this.ready = lookUpProjectId(this.config, options);
    this.parts = buildParts(this.config, this.ready, this);
    this.ports = buildPorts(this.parts, this.config);
    this.sweepGate = new SweepGate(this.config.clock);
  }

  /** @internal What this process last saw of each entity's lock. */
  get seen(): SeenSteps {
    return this.parts.seen;
  }

  /** @internal OpenTelemetry spans and counters. */
  get telemetry(): Telemetry {
    return this.parts.telemetry;
  }

  /** @internal The attempts in flight, and the shutdown gate. */
  get drain(): Drain {
    return this.parts.drain;
  }

  /**
   * Calls each listener of `name` in turn, isolated: a listener that throws, or returns a promise
   * that rejects, is logged and ignored. It never changes an answer or a stored state, and never
   * crashes the process (also when the event comes from a timer, such as a renewal).
   */
  override emit<K extends keyof LockerEvents>(name: K, ...args: LockerEvents[K]): boolean {
    return emitIsolated(this, this.config.logger, name, args);
  }

  /**
   * Express middleware that runs `handler` once per step of the entity named by the task's
   * `X-Lock-Key`, whose typed form `factory` builds from its stored properties.
   */
  handle<E, P = Json | undefined>(handler: TaskHandler<E, P, K>, factory: EntityFactory<E, K>, options: HandleOptions = {}): RequestHandler {
    return handleMiddleware(this.ports.route, keyedHandler(handler, this.keys), keyedFactory(factory, this.keys), options);
  }

  /**
   * Starts a chain on `key` (a kickoff): saves `entity` with step `lock_seq + 1` scheduled and its
   * ledger record, in one transaction, then creates the task. Throws `ChainBusyError` when
   * the chain already has a step scheduled or running, and a `TypeError` before writing anything
   * when the key could not be delivered in a task (see `checkDeliverable`). Inside a handler use
   * `ctx.schedule()`.
   */
  schedule(key: K, entity: unknown, path: string, payload?: Json, options?: ScheduleOptions): Promise<ScheduledStep> {
    return this.withKey(key, (k) => kickoff(this.ports.kickoff, k, entity, path, payload, options));
  }

  /**
   * Starts a chain on each item's entity, as `schedule()` does one, in batches: lookups of up to
   * 1,000 keys, commits that keep each entity's compare-and-swap, then the tasks with bounded
   * concurrency. Answers one result per item (`started`, `busy` or `failed`) and never throws for
   * one bad item; a key given twice throws a `TypeError` before anything is written. With a
   * `kickoffId`, a call made again (after a crash) never starts a chain twice. See
   * docs/guides/bulk-kickoff.md.
   */
  scheduleMany(items: readonly KickoffItem<K>[], options?: ScheduleManyOptions): Promise<ScheduleManyResult<K>> {
    return scheduleMany(this.ports.kickoff, items, options, this.keys);
  }

  /**
   * The operator's view: `list({ state, kind, namespace, order, limit, cursor })` pages through the
   * steps in a state (scheduled, running, stale, stalled, failed, complete) by indexed queries;
   * `step(key)` shows one entity's detail. Its keys are the store's (`K`: a `DocumentReference` on a
   * `FirestoreStore`), each written as the store's users write it (`keyPath`).
   */
  inspect(): Inspector<K> {
    return new Inspector(this.ports.inspect, () => this.declaredSchedules, this.config.scheduleNamespace, this.keys);
  }

  /**
   * Revives failed step `key` (an operator's action): it is scheduled again at the same sequence,
   * with a fresh retry budget, on a new task. With `seq`, refused unless the chain is still at that
   * step. Throws `TransitionError` (409) unless the step failed for good.
   */
  retry(key: K, options?: ActionOptions): Promise<ActionResult> {
    return this.withKey(key, (k) => retryStep(this.ports.actions, k, options));
  }

  /**
   * Ends the chain on `key` at its current step (an operator's action): the step never runs, its
   * tasks are dropped on arrival, and an attempt still running it can no longer write. A kickoff
   * may then start a new chain. Throws `TransitionError` (409) unless a step is scheduled or running.
   */
  cancel(key: K, options?: ActionOptions): Promise<ActionResult> {
    return this.withKey(key, (k) => cancelChain(this.ports.actions, k, options));
  }

  /**
   * Cancels the fan-out the parent `key` waits on, or is still writing (an operator's action): its
   * pending children's chains are cancelled and their records settled `cancelled`. Without `join`
   * the parent's chain is cancelled too; with `join`, the join runs once, told the outcome
   * `cancelled` (refused while the fan-out is still being written). Throws `TransitionError` (409)
   * once the join started, or when there is no fan-out. See docs/guides/fan-out.md, "Operators".
   */
  cancelFanOut(key: K, options?: CancelFanOutOptions): Promise<FanOutActionResult<K>> {
    return this.withKey(key, async (k) => this.onKeys(await cancelFanOut(this.ports.fan, k, options)));
  }

  /**
   * Retries the children that failed for good of the fan-out the parent `key` waits on, before its
   * join runs (an operator's action): each is revived like `retry()` and counts as pending again.
   * Children with no failed chain of their own (busy, deleted) are skipped and listed. Throws
   * `TransitionError` (409) unless the fan-out is sealed and waiting.
   */
  retryFanOutChildren(key: K, options?: RetryFanOutOptions): Promise<FanOutActionResult<K>> {
    return this.withKey(key, async (k) => this.onKeys(await retryFanOutChildren(this.ports.fan, k, options)));
  }

  /**
   * Re-delivers the current step of `key` now, on a new task (an operator's action). A lease held
   * by a running attempt is left to it (the new task is refused until it finishes); a stale one is
   * taken over. Throws `TransitionError` (409) unless a step is scheduled or running.
   */
  resend(key: K, options?: ActionOptions): Promise<ActionResult> {
    return this.withKey(key, (k) => resendStep(this.ports.actions, k, options));
  }

  /**
   * Starts a bulk operation (an operator's action on many chains at once): `retry` every failed
   * chain of a kind (`{ kind, namespace? }`), of a kickoff (`{ kind, kickoff }`) or of a fan-out
   * (`{ fanOut }`), `cancel` a kickoff's live chains (`{ kind, kickoff }`), or `resend` a kind's
   * stalled steps (`{ kind }`). It runs as a tracked operation: a record (kind `LockerOperation`)
   * whose own chain of steps acts on a page of targets at a time, each fenced, resumed after a
   * crash, on the status router's route `POST {mount}/operations/step`. Starts at most one
   * operation per `id`: called again with it, it answers the operation already started. Throws
   * `BadRequestError` for a bad filter. See docs/guides/operating.md, "Bulk actions".
   */
  bulk(action: BulkAction, filter: BulkFilter, options: BulkOptions): Promise<BulkStarted> {
    return startOperation(this.ports.bulk, action, filter, options);
  }

  /**
   * A mountable Express router with the status page (HTML), its JSON, the retry, resend and
   * cancel actions, bulk actions with their operations' pages, and the schedules of recurring work
   * (`recurring()`) with pause, resume and run now:
   * `app.use('/ops/locker', locker.statusRouter({ authenticate, kinds: ['Order'] }))`.
   * Authentication is required; POSTs are CSRF-safe. Its route `POST /operations/step` is a task
   * route (authenticated as `handle()`'s are), which runs the pages of bulk operations.
   */
  statusRouter(options: StatusRouterOptions): Router {
    const { inspect, actions, bulk } = this.ports;
    return statusRouter({
      config: settingsOf(this.config, ['logger', 'clock', 'stallAfter']),
      decodeKey,
      inspect: () => new Inspector(inspect, () => this.declaredSchedules, this.config.scheduleNamespace, shownAs(this.keys)),
      showKey: (key) => this.keys.show(key),
      retry: (key, o) => retryStep(actions, key, o),
      resend: (key, o) => resendStep(actions, key, o),
      cancel: (key, o) => cancelChain(actions, key, o),
      bulk: (action, filter, o, kinds) => startOperation(bulk, action, filter, o, kinds),
      countBulk: (action, filter, kinds): Promise<TargetCount> => {
        const checked = checkBulk(action, filter, kinds);
        return countTargets(bulk, checked.action, checked.filter, new Date(this.config.clock()), this.config.stallAfter);
      },
      operationStep: this.operationRoute(),
      encodeKey: (key) => this.encodeKey(key),
      pauseSchedule: (name) => this.pauseSchedule(name),
      resumeSchedule: (name) => this.resumeSchedule(name),
      runScheduleNow: (name, id) => this.runScheduleNow(name, id),
      declaredSchedules: () => this.declaredSchedules,
    }, options);
  }

  /** The task route of bulk operations' steps (`statusRouter()` mounts it at `/operations/step`). */
  private operationRoute(): RequestHandler {
    const { actions, fan, bulk } = this.ports;
    const parts: StepParts = {
      reads: bulk.reads,
      actions: {
        retry: (key, o, guard) => retryStep(actions, key, o, guard),
        cancel: (key, o, guard) => cancelChain(actions, key, o, guard),
        resend: (key, o, guard) => resendStep(actions, key, o, guard),
      },
      retryFanOut: (key, o) => retryFanOutChildren(fan, key, o),
      config: settingsOf(this.config, ['clock', 'stallAfter', 'logger']),
    };
    return handleMiddleware(this.ports.route, operationStep(parts), (props, key) => new OperationEntity(readOperation(key.name ?? '', props), props), { kinds: [OPERATION_KIND] });
  }

  /**
   * Re-delivers every stalled step, from the ledger records that are due (at most `limit`, oldest
   * due first), and clears the records of steps no longer live. See docs/concepts/no-step-is-lost.md.
   */
  sweep(limit = 500): Promise<SweepResult> {
    if (!this.parts.dispatcher.hasQueue) return Promise.reject(new ConfigError('sweep() needs a queue: pass `queue` to the Locker.'));
    const running = this.declarations.size === 0 ? sweep(this.ports.sweep, limit) : this.tickThenSweep(limit);
    const tracked = running.then(() => undefined, () => undefined);
    this.sweeps.add(tracked);
    void tracked.finally(() => this.sweeps.delete(tracked));
    return running;
  }

  /** With schedules declared, a sweep ticks first: its result carries the tick's (or why it failed, logged). */
  private async tickThenSweep(limit: number): Promise<SweepResult> {
    let recurring: TickResult | { error: string };
    try {
      recurring = await this.runTick();
    } catch (error) {
      this.config.logger.error('the tick of recurring work failed: the next sweep ticks again', { error: String(error) });
      recurring = { error: String(error) };
    }
    return { ...(await sweep(this.ports.sweep, limit)), recurring };
  }

  /**
   * Declares recurring work: schedule `name` starts a chain at `options.path` on each tick of
   * `options.cron` (in `options.timeZone`), exactly once per tick, from the ticks that `sweep()`
   * (the heartbeat route, or `startSweeping()` locally) and `tick()` run. Declaring the same set on
   * every instance's start is idempotent; a schedule in the store that the ticking code no longer
   * declares stops and is reported. Throws `ConfigError`, `RangeError` or `TypeError` naming what
   * is wrong. See docs/guides/recurring.md.
   */
  recurring(name: string, options: RecurringOptions<K>): void {
    if (!this.parts.reads.findsKeys) throw new ConfigError(`locker.recurring(${JSON.stringify(name)}): recurring work needs a store that finds keys by a property (findKeys): DatastoreStore, MemoryStore and FirestoreStore have it`);
    const d = declare(name, this.recurringKeys(options), this.config.scheduleNamespace);
    for (const other of this.declarations.values()) {
      if (other.name !== name && d.spec.fixedKey !== undefined && other.spec.fixedKey === d.spec.fixedKey && other.spec.fixedNamespace === d.spec.fixedNamespace) {
        throw new ConfigError(`locker.recurring(${JSON.stringify(name)}): schedule ${JSON.stringify(other.name)} already runs on ${d.spec.fixedKey}; give each schedule its own entity`);
      }
    }
    this.declarations.set(name, d);
  }

  /**
   * A schedule's options with its `key` in `Key`s: a fixed key converted now (a `TypeError` naming a
   * key the store cannot hold), a function's keys at each tick. Nothing to convert on a store of `Key`s.
   */
  private recurringKeys(options: RecurringOptions<K>): RecurringOptions {
    if (isDatastoreKeys(this.keys) || typeof options !== 'object' || options === null || options.key === undefined) return options as RecurringOptions<unknown> as RecurringOptions;
    const given = options.key;
    const keys = this.keys;
    const key = typeof given === 'function' ? (tick: RecurringTick): Key => keys.toKey((given as (tick: RecurringTick) => K)(tick)) : keys.toKey(given);
    return { ...options, key };
  }

  /**
   * One tick of recurring work now: writes the declarations, starts the chains of every schedule
   * due (exactly once per schedule and tick, whoever else ticks), and answers what it did. `sweep()`
   * calls it when schedules are declared; call it yourself from a route of your own if you like.
   */
  tick(): Promise<TickResult> {
    if (!this.parts.dispatcher.hasQueue) return Promise.reject(new ConfigError('tick() needs a queue: pass `queue` to the Locker.'));
    return this.runTick();
  }

  private runTick(): Promise<TickResult> {
    return tick(this.recurringParts(), this.declarations, TICK_BUDGET_MS);
  }

  /** Pauses schedule `name` (no tick starts it until `resumeSchedule`); answers false when it was paused already. */
  pauseSchedule(name: string): Promise<boolean> {
    return pauseSchedule(this.recurringParts(), name);
  }

  /** Resumes schedule `name` from its next tick after now (the ticks while paused are not made up); false when it was not paused. */
  resumeSchedule(name: string): Promise<boolean> {
    return resumeSchedule(this.recurringParts(), name);
  }

  /** Starts a run of schedule `name` now, exactly once per `id` (a random one by default). */
  runScheduleNow(name: string, id?: string): Promise<RunNowResult> {
    return runScheduleNow(this.recurringParts(), this.declarations.get(name), name, id);
  }

  /** The names of the schedules this code declares. */
  get declaredSchedules(): ReadonlySet<string> {
    return new Set(this.declarations.keys());
  }

  private recurringParts(): TickParts & ScheduleOperatorParts {
    return {
      locks: this.parts.locks, reads: this.parts.reads, clock: this.config.clock, logger: this.config.logger, namespace: this.config.scheduleNamespace,
      kickoff: (items, options) => scheduleMany(this.ports.kickoff, items, options, DATASTORE_KEYS),
    };
  }

  /**
   * Express middleware that runs `sweep()` and answers its counts as JSON (for Cloud Scheduler).
   * A call while a sweep runs in this process gets that sweep's counts; a call within
   * `minIntervalMs` (10 s by default) of the last sweep's start is answered 429 and does nothing.
   * Once `shutdown()` began it answers 503 without sweeping (the scheduler calls again later).
   */
  sweepHandler(options: SweepHandlerOptions = {}): RequestHandler {
    return sweepMiddleware({
      config: this.ports.sweepRoute,
      sweep: (minIntervalMs) => this.sweepGate.runIfDue(minIntervalMs, () => this.sweep()),
      stopping: () => this.drain.stopping,
    }, options);
  }

  /**
   * Runs `sweep()` every `intervalMs` until `shutdown()` (the local set-up's stand-in for Cloud
   * Scheduler). Sweeps never overlap: the next one is timed from the end of the last. The timer
   * never keeps the process alive on its own.
   */
  startSweeping(intervalMs: number): void {
    if (!Number.isSafeInteger(intervalMs) || intervalMs < 1) throw new ConfigError(`startSweeping(intervalMs): a positive whole number of ms; got ${String(intervalMs)}`);
    this.stopSweeping();
    const sweeping = { stopped: false };
    const tick = (): void => {
      this.sweepTimer = setTimeout(() => {
        void this.sweepGate.run(() => this.sweep())
          .then(() => undefined, (error: unknown) => this.config.logger.warn('sweep failed', { error: String(error) }))
          .finally(() => { if (!sweeping.stopped) tick(); });
      }, intervalMs);
      this.sweepTimer.unref();
    };
    this.stopSweeping = () => { sweeping.stopped = true; clearTimeout(this.sweepTimer); };
    tick();
  }

  /**
   * Stops this Locker for good, within `timeoutMs` (default 8 000: Cloud Run kills an instance
   * 10 s after SIGTERM, and the HTTP server still has to close). At once, every `handle()` route
   * answers 503 without touching the store (Cloud Tasks delivers the task again, elsewhere). Running
   * attempts may finish and store their outcome; when the time is nearly up, those still running are
   * stopped through `ctx.signal` (`ShutdownError`) and their leases handed back: silently when the
   * handler rejects with the signal's reason, written stale (the next delivery overwrites it with an
   * alert naming the attempt) when it keeps running, or rejects with any other error. The sweeper
   * stops and the sweep route answers 503; the sweeps in flight (of the timer, the route, or a
   * direct call), alerts still being sent and ledger records still being removed are waited for,
   * but never past `timeoutMs` in all: what is cut off stays owed in the store (an alert claimed
   * and not marked sent, a ledger record) and the sweep finishes it. Calling it again returns the
   * same promise. See docs/concepts/shutdown-and-time-limits.md.
   */
  shutdown(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
      return Promise.reject(new ConfigError(`shutdown({ timeoutMs }): a positive whole number of ms; got ${String(timeoutMs)}`));
    }
    this.drain.stopping = true; // at once, before any await: the next task is answered 503
    this.stopping ??= this.stop(timeoutMs);
    return this.stopping;
  }

  private async stop(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    this.stopSweeping();
    // The last quarter (at most 2 s) is for stopping: half to let handlers return, half to write the hand-backs.
    const stopping = Math.min(2_000, Math.floor(timeoutMs / 4));
    if (!(await this.drain.settled(timeoutMs - stopping))) {
      this.config.logger.warn('shutdown: stopping the handlers still running and handing their leases back', { running: this.drain.inFlight });
      this.drain.interruptAll(Math.floor(stopping / 2));
      if (!(await this.drain.settled(stopping))) {
        this.config.logger.error('shutdown: attempts still unanswered at the deadline; their leases are taken over once stale', { running: this.drain.inFlight });
      }
    }
    // What is left of the time goes to the sweeps, alerts and ledger removals still in flight; none of
    // them is lost when cut off (an alert stays claimed, a record stays for the sweep).
    const rest = Promise.all([...this.sweeps, this.parts.alerts.drain(), this.parts.ledger.drain()]).then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const cut = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), Math.max(0, deadline - performance.now())); });
    const finished = await Promise.race([rest, cut]);
    clearTimeout(timer);
    if (!finished) this.config.logger.warn('shutdown: time is up; sweeps, alerts or ledger removals still in flight are left to the next sweep (nothing owed is lost)', { timeoutMs });
  }

  /**
   * `fn` on the `Key` of the store's key `key`: a key the store's key type refuses is a rejected
   * promise (its `TypeError`), as every other bad argument of these methods is.
   */
  private withKey<T>(key: K, fn: (key: Key) => Promise<T>): Promise<T> {
    let k: Key;
    try {
      k = this.keys.toKey(key);
    } catch (error) {
      return Promise.reject(error);
    }
    return fn(k);
  }

  /** A fan-out action's result with its skipped children's keys in the store's key type (its fields in their order). */
  private onKeys(result: FanOutActionResult): FanOutActionResult<K> {
    const { skipped, ...rest } = result;
    if (!skipped) return rest;
    return { ...result, skipped: skipped.map((child) => ({ ...child, key: this.keys.fromKey(child.key) })) };
  }

  /** `X-Lock-Key` for a key: the legacy url-safe encoding, as the Go library sends it. */
  encodeKey(key: Key): string {
    return this.parts.dispatcher.encodeKey(key);
  }

  /** The key in an `X-Lock-Key` header; throws `BadRequestError` when it is malformed. */
  decodeKey(encoded: string): Key {
    return decodeKey(encoded);
  }
}

/** `shutdown()`'s default time, ms: inside Cloud Run's 10 s between SIGTERM and SIGKILL, with time left to close the server. */
const DEFAULT_SHUTDOWN_TIMEOUT = 8_000;

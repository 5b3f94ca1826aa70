/**
 * One sequence's world: two or three instances sharing one store, the queue (every task the
 * instances created, delivered only when the model says, as often as it says), the model's clock,
 * the alerter, and what the model observes. The commands (commands.ts) act on it; `quiet()`
 * brings it to rest (alerter up, store healthy, deliveries and sweeps until nothing moves) before
 * the oracle judges what was observed.
 */
import { request } from 'node:http';
import type { Key } from '@google-cloud/datastore';
import type { Locker } from '../src/locker';
import type { Properties, Store, TaskRequest } from '../src/types';
import type { TestSmtpServer } from '../test/support/smtp';
import { AlertDesk, type AlerterKind } from './alert-desk';
import { PLAIN, ROUTES, scriptOf, type HandlerPort, type Script, ModelEntity } from './handler';
import { childNames, type FanSpec } from './fan-out-plan';
import { Instance, MODEL_KIND, OPS_MOUNT, TIMINGS, type KillPoint } from './instance';
import type { Loopback } from './loopback';
import { emptyObservations, type Observations, type Run } from './observations';
import { FaultyStore, never } from './store-faults';
import { RECURRING_ROUTE, SCHEDULE_NAMES, type Declares } from './recurring';
import type { TickResult } from '../src/recurring/recurring-types';

/** What a sequence is run with. */
export interface SequenceConfig {
  /** Instances sharing the store. */
  instances: number;
  alerter: AlerterKind;
  maxRetries: number;
  /** The Lockers' `requestTimeout`, ms of real time, where a sequence cuts steps at it (a `cut` command waits for it). */
  requestTimeout?: number;
  /** Every instance declares the model's schedules (recurring.ts); undefined or false: none, and no tick. */
  recurring?: boolean;
  /** The alerter is down from the start (an SMTP outage the sequence begins in), until an `alerter up` or `quiet()`. */
  alerterDown?: boolean;
}

/** What a world is built on: the store, its keys, the loopback server and the SMTP server. */
export interface Backend {
  store: Store;
  key(name: string): Key;
  loopback: Loopback;
  smtp: TestSmtpServer | undefined;
}

/** The entities every sequence works on: few, so that operations meet on them (fan-out children are drawn from them too). */
export const ENTITIES = ['e0', 'e1', 'e2', 'e3'] as const;

/** How long a shutdown may take, ms (real time: the drain waits for answers). */
const SHUTDOWN_MS = 400;
/** The clock's start: a fixed instant, so a seed runs the same. */
const START = Date.UTC(2030, 0, 1);
/** How far the clock moves between rounds of `quiet()`: past a stall, a lease, the alert graces and a rate window. */
const QUIET_STEP = TIMINGS.stallAfter + 10_000;
/** Rounds of `quiet()` at most. */
const QUIET_ROUNDS = 12;

/** A delivery in flight. */
interface Delivery {
  id: string;
  instance: Instance;
  task: string;
  answered: Promise<number | undefined>;
  /** Resolves the next time the run waits for the model. */
  waiting: Deferred;
}

/** A run waiting for the model. */
interface Gate {
  instance: Instance;
  release: (() => void) | undefined;
  /** The run's `ctx.signal` while it waits (undefined when it runs on past it). */
  signal: AbortSignal | undefined;
}

export class World {
  now = START;
  readonly clock = (): number => this.now;
  readonly store: FaultyStore;
  readonly desk: AlertDesk;
  readonly slots: Instance[] = [];
  readonly seen: Observations;
  /** Every task created, by name, and whether an answer ended it (2xx). */
  readonly tasks = new Map<string, { task: TaskRequest; done: boolean }>();
  private readonly deliveries = new Map<string, Delivery>();
  private readonly gates = new Map<string, Gate>();
  private readonly aborter = new AbortController();
  private readonly runsByAttempt = new Map<string, Run>();
  /** Ids of every instance this world served, to stop serving them at the end. */
  private readonly served: string[] = [];
  private serial = 0;
  /** Entities a kickoff of this sequence was made on (whatever its outcome). */
  readonly kickedOff = new Set<string>();
  /** Operations run (commands, and the deliveries and sweeps of `quiet()`). */
  operations = 0;
  /** Entities whose locks `look()` reads: the model's, and every fan-out child's. */
  private readonly watched = new Set<string>(ENTITIES);
  /** Each fanning step's children (as its first attempt gave them), policy, and the order its last attempt gave, by `entity#seq chain`. */
  private readonly fanSteps = new Map<string, { names: string[]; policy: FanSpec['policy']; reverse: boolean; since: number }>();
  /** The code each slot runs (which schedules it declares), where the sequence has recurring work; a restart keeps its slot's. */
  private readonly codes: Declares[] = [];
  /** The run entities recurring tasks named, by name. */
  private readonly runEntities = new Map<string, Key>();

  constructor(readonly config: SequenceConfig, private readonly backend: Backend) {
    this.store = new FaultyStore(backend.store);
    this.desk = new AlertDesk(config.alerter, backend.smtp, this.clock);
    if (config.alerterDown) this.desk.setUp(false);
    this.seen = emptyObservations([...ENTITIES], config.maxRetries);
    for (let i = 0; i < config.instances; i++) {
      this.codes.push('old');
      this.slots.push(this.spawn(i));
    }
  }

  key(entity: string): Key {
    return this.backend.key(entity);
  }

  private spawn(slot: number): Instance {
    const id = `n${++this.serial}`;
    let self: Instance | undefined;
    const port: HandlerPort = {
      ran: (ctx, idempotencyKey, finish) => {
        const script = scriptOf(ctx);
        const run: Run = {
          entity: ctx.key.name!, seq: ctx.seq, attempt: ctx.attempt, chain: chainOf(ctx), idempotencyKey,
          url: ctx.request.originalUrl, body: ctx.payload === undefined ? '' : JSON.stringify(ctx.payload), finish, forged: script.forged, op: this.operations,
        };
        this.runsByAttempt.set(ctx.attempt, run);
        this.seen.runs.push(run);
      },
      lastFinish: (ctx) => {
        const entity = ctx.key.name!;
        const chain = chainOf(ctx);
        return this.seen.runs.filter((r) => r.entity === entity && r.seq === ctx.seq && r.chain === chain).at(-1)?.finish;
      },
      fanChildren: (ctx, spec) => {
        const step = `${ctx.key.name!}#${ctx.seq} ${chainOf(ctx) ?? ''}`;
        const known = this.fanSteps.get(step);
        const names = known?.names ?? childNames(spec.children, spec.wide);
        this.fanSteps.set(step, { names, policy: known?.policy ?? spec.policy, reverse: spec.reverse, since: known?.since ?? this.now });
        for (const name of names) if (!this.watched.has(name)) { this.watched.add(name); this.seen.locks.set(name, []); }
        return names;
      },
      resumeFan: (ctx) => {
        const known = this.fanSteps.get(`${ctx.key.name!}#${ctx.seq} ${chainOf(ctx) ?? ''}`);
        return known && { children: known.names, wide: false, reverse: !known.reverse, throwAt: undefined, policy: known.policy };
      },
      keyOf: (name) => this.key(name),
      fannedOut: (ctx, started, children, spec) => {
        const entity = ctx.key.name!;
        const chain = chainOf(ctx);
        const known = this.fanSteps.get(`${entity}#${ctx.seq} ${chain ?? ''}`);
        const given = known?.names ?? children;
        this.seen.fanOuts.push({ entity, seq: ctx.seq, chain, id: started.id, children, given, policy: known?.policy ?? spec.policy, sealedAt: known?.since ?? this.now, op: this.operations }); // the policy the header was written with: the first attempt's (a resumed attempt's own is not read)
        this.seen.committed.push({ entity, seq: started.joinSeq });
      },
      joined: (ctx, shown) => {
        const script = scriptOf(ctx);
        this.seen.joins.push({ entity: ctx.key.name!, seq: ctx.seq, chain: chainOf(ctx), attempt: ctx.attempt, url: ctx.request.originalUrl, forged: script.forged, shown, now: this.now, op: this.operations });
      },
      effect: (ctx) => {
        const run = this.runsByAttempt.get(ctx.attempt);
        if (run) this.seen.effects.push(run);
      },
      scheduled: (ctx, seq) => this.seen.committed.push({ entity: ctx.key.name!, seq }),
      wait: (gateId, signal) => this.wait(gateId, self!, signal),
    };
    const instance = new Instance(id, {
      store: this.store, desk: this.desk, clock: this.clock, maxRetries: this.config.maxRetries, port,
      ...(this.config.requestTimeout === undefined ? {} : { requestTimeout: this.config.requestTimeout }),
      created: (task) => {
        if (!this.tasks.has(task.name)) this.tasks.set(task.name, { task, done: false });
        const h = lowerCase(task.headers);
        const key = h['x-lock-key'] === undefined ? undefined : self?.locker.decodeKey(h['x-lock-key']);
        this.seen.tasks.push({ entity: key?.name ?? '', seq: Number(h['x-lock-seq']), chain: h['x-lock-chain'], path: task.path, body: task.body });
        if (key?.name !== undefined && task.path === RECURRING_ROUTE) this.runEntities.set(key.name, key);
      },
      listen: (locker) => this.listen(locker),
      namespace: this.key('e0').namespace,
      declares: this.config.recurring ? this.codes[slot] : undefined,
    });
    self = instance;
    this.backend.loopback.add(id, instance.app);
    this.served.push(id);
    return instance;
  }

  private listen(locker: Locker): void {
    locker.on('failed', (e) => this.seen.failed.push({ entity: e.key.name!, seq: e.seq, attempt: e.attempt }));
    locker.on('overwritten', (e) => this.seen.overwritten.push({ entity: e.key.name!, seq: e.seq, previous: e.previous, attempt: e.attempt }));
  }

  /** The instance in `slot` (modulo the slots). */
  at(slot: number): Instance {
    return this.slots[slot % this.slots.length]!;
  }

  /** Replaces every dead instance with a fresh one (the process restarted). */
  restartDead(): void {
    for (let i = 0; i < this.slots.length; i++) {
      if (this.slots[i]!.dead) this.slots[i] = this.spawn(i);
    }
  }

  /** Runs an instance's call, or never settles once the instance died; errors are the caller's to read. */
  async call<T>(instance: Instance, fn: () => Promise<T>): Promise<{ value: T } | { error: unknown } | undefined> {
    const done = fn().then((value) => ({ value }), (error: unknown) => ({ error }));
    return Promise.race([done, instance.death.then(() => undefined)]);
  }

  // ------------------------------------------------------------------------------------------
  // Deliveries

  /** Names of tasks: those no answer ended yet, or every one (`late` includes ended ones: a late duplicate). */
  taskNames(late: boolean): string[] {
    return [...this.tasks].filter(([, t]) => late || !t.done).map(([name]) => name);
  }

  /** The newest open task of `entity`'s steps (undefined when it has none). */
  openTaskOf(entity: string): string | undefined {
    const locker = this.slots[0]!.locker;
    const open = [...this.tasks].filter(([, t]) => !t.done && locker.decodeKey(lowerCase(t.task.headers)['x-lock-key'] ?? '').name === entity);
    return open.at(-1)?.[0];
  }

  /** Delivers task `name` to `instance` with `script`; resolves once it is answered, waits for the model, or its instance died. */
  async deliver(name: string, instance: Instance, script: Omit<Script, 'id'>): Promise<void> {
    await this.settle(this.start(name, instance, script));
  }

  /** Starts a delivery, as Cloud Tasks sends one; or, `forged`, the request someone holding a task credential makes of a kept task. */
  start(name: string, instance: Instance, script: Omit<Script, 'id'>, forged?: Forgery): Delivery {
    const entry = this.tasks.get(name)!;
    const id = `d${++this.serial}`;
    const request = forged ? forge(entry.task, forged) : { path: entry.task.path, headers: entry.task.headers, body: entry.task.body };
    const headers: Record<string, string> = { ...request.headers, 'x-model-script': JSON.stringify({ ...script, id, ...(forged ? { forged } : {}) }) };
    if (request.body !== '') headers['content-type'] = 'application/json';
    const answered = post(this.backend.loopback.url(instance.id, request.path), headers, request.body, this.aborter.signal).then((status) => {
      if (!forged && status !== undefined && status >= 200 && status < 300) entry.done = true;
      return status;
    });
    const delivery: Delivery = { id, instance, task: name, answered, waiting: deferred() };
    this.deliveries.set(id, delivery);
    void answered.then(() => this.deliveries.delete(id));
    return delivery;
  }

  /** Resolves once the delivery is answered, its run waits for the model, or its instance died. */
  async settle(d: Delivery): Promise<void> {
    await Promise.race([d.answered, d.waiting.promise, d.instance.death]);
  }

  private wait(id: string, instance: Instance, signal: AbortSignal | undefined): Promise<'released' | 'aborted'> {
    if (instance.dead) return never();
    const waiting = new Promise<'released' | 'aborted'>((resolve) => {
      const gate: Gate = { instance, release: () => resolve('released'), signal };
      this.gates.set(id, gate);
      if (signal) {
        if (signal.aborted) resolve('aborted');
        else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
      }
    }).then((how) => {
      this.gates.delete(id);
      return instance.dead ? never() : how;
    });
    const d = this.deliveries.get(id);
    if (d) {
      const reached = d.waiting;
      d.waiting = deferred();
      reached.resolve();
    }
    return waiting;
  }

  /**
   * Waits (real time: the Locker's time limits run on real timers) until the time limit cuts run
   * `id` (its signal aborts near `requestTimeout`), then until its delivery is answered, waits
   * again, or its instance died. Nothing when the sequence sets no `requestTimeout`.
   */
  async cut(id: string): Promise<void> {
    const gate = this.gates.get(id);
    const limit = this.config.requestTimeout;
    if (!gate?.signal || limit === undefined) return;
    const signal = gate.signal;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => { if (signal.aborted) resolve(); else signal.addEventListener('abort', () => resolve(), { once: true }); }),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, limit + 1_000); }),
      gate.instance.death,
    ]);
    clearTimeout(timer);
    const d = this.deliveries.get(id);
    if (d) await this.settle(d);
  }

  /** Runs waiting for the model on live instances, oldest first. */
  waitingRuns(): string[] {
    return [...this.gates].filter(([, g]) => !g.instance.dead).map(([id]) => id);
  }

  /** Lets run `id` go on; resolves once its delivery is answered, waits again, or its instance died. */
  async release(id: string): Promise<void> {
    const gate = this.gates.get(id);
    const d = this.deliveries.get(id);
    gate?.release?.();
    if (d) await this.settle(d);
  }

  // ------------------------------------------------------------------------------------------
  // The rest of the world

  /** Moves the model's clock. */
  advance(ms: number): void {
    this.now += ms;
  }

  /** Kills the instance in `slot` now, or arms its death at its next write or task creation. */
  kill(slot: number, point: KillPoint): void {
    this.at(slot).kill(point);
  }

  /** Shuts the instance in `slot` down (SIGTERM), then it is gone (SIGKILL after the grace) and restarts. */
  async shutdown(slot: number): Promise<void> {
    const instance = this.at(slot);
    await this.call(instance, () => instance.locker.shutdown({ timeoutMs: SHUTDOWN_MS }));
    instance.store.die();
  }

  /** A kickoff of `entity` from `instance`. */
  async kickoff(entity: string, instance: Instance): Promise<void> {
    this.kickedOff.add(entity);
    const r = await this.call(instance, () => instance.locker.schedule(this.key(entity), new ModelEntity({ n: 0 }), '/step'));
    if (r && 'value' in r) this.seen.committed.push({ entity, seq: r.value.seq });
  }

  /** A bulk kickoff of `entities` from `instance`, under `kickoffId` (a random one when undefined). */
  async kickoffMany(entities: readonly string[], kickoffId: string | undefined, instance: Instance): Promise<void> {
    for (const e of entities) this.kickedOff.add(e);
    const items = entities.map((e) => ({ key: this.key(e), entity: new ModelEntity({ n: 0 }), path: '/step' }));
    const r = await this.call(instance, () => instance.locker.scheduleMany(items, kickoffId === undefined ? {} : { kickoffId }));
    if (!r || !('value' in r)) return;
    for (const result of r.value.results) {
      const entity = result.key.name!;
      // A resumed chain's step was seen committed when it was (its `seq` may name no step: a chain that completed since).
      if (result.status === 'started' && !result.resumed) this.seen.committed.push({ entity, seq: result.seq });
      this.seen.kickoffs.push({ kickoffId: r.value.kickoffId, entity, status: result.status, resumed: result.status === 'started' && result.resumed });
    }
  }

  /** A forged request made of kept task `name`, delivered to `instance`. */
  async deliverForged(name: string, instance: Instance, how: Forgery): Promise<void> {
    await this.settle(this.start(name, instance, PLAIN, how));
  }

  /** The app deletes `entity` itself (its own Datastore client, no fault, no instance). */
  async deleteEntity(entity: string): Promise<void> {
    await this.backend.store.transaction(async (tx) => { tx.delete(this.key(entity)); });
  }

  /** An operator's `cancelFanOut()` (with the join, or not) or `retryFanOutChildren()` of `entity`'s fan-out, from `instance`. */
  async fanOutAction(action: FanOutAction, entity: string, instance: Instance): Promise<void> {
    const key = this.key(entity);
    await this.call(instance, () => (action === 'retryFanOutChildren' ? instance.locker.retryFanOutChildren(key) : instance.locker.cancelFanOut(key, action === 'cancelFanOut+join' ? { join: true } : {})));
  }

  /**
   * The entities in trouble as the model last read them, in a stable order: a chain failed for good,
   * or a lock carrying an alert claim not marked sent (the status page lists both). What an
   * operator acts on most.
   */
  troubled(): string[] {
    return [...this.watched].filter((entity) => {
      const last = this.seen.locks.get(entity)?.at(-1);
      return last !== undefined && last.state !== DELETED && (this.failed(entity) || last.alerts.some((a) => !a.endsWith(':sent')));
    });
  }

  /**
   * The parents waiting at a fan-out's join as the model last read them, in a stable order: an
   * entity whose lock is scheduled at the join step of a fan-out its chain's step started. What an
   * operator sees of a fan-out on the status page.
   */
  waitingParents(): string[] {
    const waiting = new Set<string>();
    for (const f of this.seen.fanOuts) {
      const last = this.seen.locks.get(f.entity)?.at(-1);
      if (last !== undefined && last.state === 'scheduled' && last.seq === f.seq + 1 && last.chain === f.chain) waiting.add(f.entity);
    }
    return [...waiting];
  }

  /** Whether `entity`'s lock, as the model last read it, is failed for good. */
  failed(entity: string): boolean {
    return this.seen.locks.get(entity)?.at(-1)?.state === 'failed';
  }

  /** An operator's retry, cancel or resend of `entity`'s step, from `instance`. */
  async operate(action: 'retry' | 'cancel' | 'resend', entity: string, instance: Instance): Promise<void> {
    const r = await this.call(instance, () => instance.locker[action](this.key(entity)));
    if (action === 'cancel' && r && 'value' in r) this.seen.cancelled.push({ entity, seq: r.value.seq });
  }

  /**
   * An operator's bulk action from `instance` (`locker.bulk()`): retry every failed chain of the
   * model's kind, or resend its stalled steps, as a tracked operation whose pages are steps
   * delivered like any task (the deliveries of the sequence and of `quiet()` run them). The same
   * `id` again starts nothing.
   */
  async bulk(action: 'retry' | 'resend', id: string, instance: Instance): Promise<void> {
    const namespace = this.key('e0').namespace;
    await this.call(instance, () => instance.locker.bulk(action, { kind: MODEL_KIND, ...(namespace ? { namespace } : {}) }, { mount: OPS_MOUNT, id }));
  }

  /** A sweep from `instance`; resolves to what it did, or undefined. */
  async sweep(instance: Instance): Promise<{ resent: number; alerted: number } | undefined> {
    const now = this.now;
    const op = this.operations;
    const serial = this.seen.recurring.serials++;
    const r = await this.call(instance, () => instance.locker.sweep());
    this.noteTick(instance, serial, now, op, r && ('value' in r ? r.value.recurring ?? { error: 'the sweep did not tick' } : { error: String(r.error) }));
    return r && 'value' in r ? r.value : undefined;
  }

  /**
   * Reads every entity's lock from the store itself (no fault, no instance) and notes the ones that
   * changed: the model's entities, fan-out children, and the run entities recurring tasks named (a
   * schedule's run chain is held to (a) and (c) as any chain: a step seen failed or cancelled there
   * ended, and a claim seen there is owed). The app never deletes a run entity: one not found is
   * not noted as deleted.
   */
  async look(): Promise<void> {
    const names = [...this.watched];
    const runs = [...this.runEntities].filter(([name]) => !this.watched.has(name));
    const all = await this.readLocks([...names.map((entity) => this.key(entity)), ...runs.map(([, key]) => key)]);
    for (const [name] of runs) {
      this.seen.recurring.runEntities.add(name);
      if (!this.seen.locks.has(name)) this.seen.locks.set(name, []);
    }
    for (const [i, entity] of [...names, ...runs.map(([name]) => name)].entries()) {
      const props = all[i];
      if (!props && i >= names.length) continue;
      if (!props) {
        const seen = this.seen.locks.get(entity)!;
        const last = seen.at(-1);
        if (last && last.state !== DELETED) seen.push({ seq: last.seq, chain: last.chain, op: this.operations, now: this.now, state: DELETED, alerts: [] });
        continue;
      }
      const lock = {
        seq: Number(props.lock_seq), chain: typeof props.lock_chain === 'string' ? props.lock_chain : undefined, op: this.operations, now: this.now,
        state: typeof props.lock_state === 'string' ? props.lock_state : undefined,
        alerts: Array.isArray(props.lock_alerts) ? props.lock_alerts.map(String) : [],
      };
      const seen = this.seen.locks.get(entity)!;
      const last = seen.at(-1);
      if (!last || last.seq !== lock.seq || last.chain !== lock.chain || last.state !== lock.state || last.alerts.join() !== lock.alerts.join()) seen.push(lock);
    }
  }

  /**
   * Brings the world to rest: the store healed, the alerter up, deaths armed and not struck
   * forgotten, waiting runs released, then rounds
   * of deliveries of every open task and a sweep, the clock moved past a stall between rounds,
   * until two rounds in a row ran no handler, re-sent nothing and alerted nothing.
   */
  async quiet(): Promise<void> {
    this.store.heal();
    this.desk.setUp(true);
    this.restartDead();
    for (const instance of this.slots) instance.disarm(); // a death armed and not struck yet is a fault healed
    for (const id of this.waitingRuns()) {
      await this.release(id);
      await this.look();
    }
    const sweepers = this.quietSweepers();
    if (this.config.recurring) {
      // Recurring work stops: once the open tasks ran (a run a dead tick started ends first), a
      // last tick starts what is due and what is pending, then every schedule is paused (its
      // pending runs still start, on the sweeps below), so that the rounds come to rest.
      await this.deliverOpen();
      this.seen.recurring.quietOp = ++this.operations;
      await this.tick([sweepers[0]!]);
      for (const name of SCHEDULE_NAMES) await this.control('pause', name, this.at(sweepers[0]!));
      this.restartDead();
      await this.look();
    }
    let still = 0;
    for (let round = 0; round < QUIET_ROUNDS && still < 2; round++) {
      const before = this.seen.runs.length + this.desk.given.length;
      let moved = 0;
      await this.deliverOpen();
      this.advance(QUIET_STEP);
      this.operations++;
      const swept = await this.sweep(this.at(sweepers[round % sweepers.length]!));
      moved += (swept?.resent ?? 0) + (swept?.alerted ?? 0);
      await this.look();
      moved += this.seen.runs.length + this.desk.given.length - before;
      still = moved === 0 && swept !== undefined ? still + 1 : 0; // a sweep that did not finish is no sign of rest
    }
  }

  /** Delivers every open task once (plainly, to the slots in turn), then releases the runs left waiting. */
  private async deliverOpen(): Promise<void> {
    for (const [i, name] of this.taskNames(false).entries()) {
      this.operations++;
      await this.deliver(name, this.at(i), PLAIN);
      this.restartDead();
      await this.look();
    }
    for (const id of this.waitingRuns()) await this.release(id);
  }

  /** The slots whose sweeps bring the world to quiet: those running the old code (every schedule declared), or every slot when none does. */
  private quietSweepers(): number[] {
    const old = this.slots.map((_, i) => i).filter((i) => this.codes[i] === 'old');
    return old.length > 0 ? old : this.slots.map((_, i) => i);
  }

  /** After quiet: the schedules as the operator sees them, and the lock of every run entity a recurring task named (the store itself). */
  async readRecurring(): Promise<void> {
    if (!this.config.recurring) return;
    const instance = this.at(this.quietSweepers()[0]!);
    const r = await this.call(instance, () => instance.locker.inspect().schedules({ limit: 100 }));
    if (r && 'value' in r) this.seen.recurring.views = r.value.schedules;
    const runs = [...this.runEntities];
    const all = await this.readLocks(runs.map(([, key]) => key));
    for (const [i, [name]] of runs.entries()) {
      const props = all[i];
      this.seen.recurring.finalStates.set(name, typeof props?.lock_state === 'string' ? props.lock_state : undefined);
    }
  }

  /**
   * Reads entities from the store itself (no fault, no instance), in the keys' order: in one
   * strongly consistent lookup where the store has `readMany` (each is one round trip to an
   * emulator, the Native-mode one's dearest), else one `get` each.
   */
  private async readLocks(keys: readonly Key[]): Promise<Array<Properties | undefined>> {
    const store = this.backend.store;
    if (!store.readMany) return Promise.all(keys.map((key) => store.get(key)));
    const out: Array<Properties | undefined> = [];
    for (let start = 0; start < keys.length; start += 1_000) out.push(...(await store.readMany(keys.slice(start, start + 1_000))).map((r) => r.properties));
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // Recurring work

  /** The code the instance in `slot` runs. */
  codeOf(slot: number): Declares {
    return this.codes[slot % this.slots.length]!;
  }

  /** A deploy: the slot's instance is replaced (it dies now) by one running `code`. */
  redeploy(slot: number, code: Declares): void {
    const i = slot % this.slots.length;
    this.codes[i] = code;
    this.slots[i]!.kill('now');
  }

  /** `locker.tick()` on the instances in `slots`, all at once; each call is noted. With `dieAfterWrites`, the first of them dies just after that many writes. */
  async tick(slots: readonly number[], dieAfterWrites?: number): Promise<void> {
    if (dieAfterWrites !== undefined && slots.length > 0) this.at(slots[0]!).killAfterWrites(dieAfterWrites);
    await Promise.all(slots.map(async (slot) => {
      const instance = this.at(slot);
      const now = this.now;
      const op = this.operations;
      const serial = this.seen.recurring.serials++;
      const r = await this.call(instance, () => instance.locker.tick());
      this.noteTick(instance, serial, now, op, r && ('value' in r ? r.value : { error: String(r.error) }));
    }));
  }

  private noteTick(instance: Instance, serial: number, now: number, op: number, r: TickResult | { error: string } | undefined): void {
    if (!instance.declares) return;
    const ok = r !== undefined && !('error' in r) && !r.partial;
    const note = r === undefined ? 'its instance died' : 'error' in r ? `failed: ${r.error}` : `started ${r.started}, skipped ${r.skipped}, failed ${r.failed}${r.partial ? ', partial' : ''}`;
    this.seen.recurring.ticks.push({ serial, now, op, declares: instance.declares, ok, failed: r !== undefined && !('error' in r) ? r.failed : undefined, note });
  }

  /** An operator's pause or resume of `schedule`, from `instance`. */
  async control(action: 'pause' | 'resume', schedule: string, instance: Instance): Promise<void> {
    const now = this.now;
    const op = this.operations;
    const serial = this.seen.recurring.serials++;
    const r = await this.call(instance, () => (action === 'pause' ? instance.locker.pauseSchedule(schedule) : instance.locker.resumeSchedule(schedule)));
    this.seen.recurring.controls.push({ serial, action, schedule, now, op, answered: r !== undefined && 'value' in r });
  }

  /**
   * An operator's run-now of `schedule` under `id`, from `instance`. The clock moves 1 ms first: a
   * run-now's time is then never a tick's (whole minutes), and no two calls share one.
   */
  async runNow(schedule: string, id: string, instance: Instance): Promise<void> {
    this.advance(1);
    const now = this.now;
    const op = this.operations;
    const r = await this.call(instance, () => instance.locker.runScheduleNow(schedule, id));
    this.seen.recurring.runNows.push({
      schedule, id, now, op,
      ...(r && 'value' in r ? { answer: { at: r.value.at.toISOString(), outcome: r.value.outcome } } : {}),
      ...(r && 'error' in r ? { error: String(r.error) } : {}),
    });
  }

  /** What the oracle judges. */
  observations(): Observations {
    this.seen.given = [...this.desk.given];
    this.seen.received = this.desk.received();
    return this.seen;
  }

  /** Ends the sequence: requests still open are cut, instances forgotten, alerters closed. */
  async close(): Promise<void> {
    this.aborter.abort();
    for (const instance of this.slots) instance.store.die();
    this.backend.loopback.dropConnections();
    for (const id of this.served) this.backend.loopback.remove(id);
    await this.desk.close();
  }
}

/** The state `look()` notes for an entity it read before and finds gone (the app deleted it). */
export const DELETED = 'deleted (by the app)';

/** The operator's actions on a whole fan-out. */
export type FanOutAction = 'cancelFanOut' | 'cancelFanOut+join' | 'retryFanOutChildren';

/**
 * How a kept task is forged: to a route no task is made for, to that route with the task's path in
 * its query, to the task's path under a prefix, with another body, or as the next step (another
 * `X-Lock-Seq`, to the task's own route, the join's, or the step route).
 */
export const FORGERIES = ['route', 'query', 'prefix', 'body', 'seq+1', 'seq+1 join', 'seq+1 step'] as const;
export type Forgery = (typeof FORGERIES)[number];

/** The request a forgery makes of `task`. */
function forge(task: TaskRequest, how: Forgery): { path: string; headers: Record<string, string>; body: string } {
  const headers = { ...task.headers };
  const seqHeader = Object.keys(headers).find((h) => h.toLowerCase() === 'x-lock-seq');
  switch (how) {
    case 'route': return { path: ROUTES.other, headers, body: task.body };
    case 'query': return { path: `${ROUTES.other}?then=${task.path}`, headers, body: task.body };
    case 'prefix': return { path: `/admin${task.path}`, headers, body: task.body };
    case 'body': return { path: task.path, headers, body: JSON.stringify({ forged: true }) };
    default: {
      if (seqHeader) headers[seqHeader] = String(Number(headers[seqHeader]) + 1);
      const path = how === 'seq+1 join' ? ROUTES.join : how === 'seq+1 step' ? ROUTES.step : task.path;
      return { path, headers, body: task.body };
    }
  }
}

/** The chain a task request names (`X-Lock-Chain`). */
function chainOf(ctx: { request: { headers: Record<string, string | string[] | undefined> } }): string | undefined {
  const chain = ctx.request.headers['x-lock-chain'];
  return typeof chain === 'string' ? chain : undefined;
}

/** Headers with lower-case names. */
function lowerCase(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

/**
 * POSTs a task on a connection of its own (no keep-alive: a connection a dead instance's request
 * holds is cut at the end of its sequence). Resolves to the status, or undefined when cut.
 */
function post(url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false, signal }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

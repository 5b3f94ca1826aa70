/**
 * The operations of the model, as fast-check commands over a `World`, and their arbitraries. Every
 * command is always applicable: one that finds nothing to act on (no open task, no waiting run)
 * does nothing, so a shrunk sequence stays runnable. After each command, dead instances restart
 * and the model reads every entity's lock.
 */
import fc from 'fast-check';
import { BLOCKS, FINISHES, ON_SIGNAL, type Script } from './handler';
import { TIMINGS, type KillPoint } from './instance';
import { POLICIES, type FanSpec } from './fan-out-plan';
import { ENTITIES, FORGERIES, type FanOutAction, type Forgery, type SequenceConfig, type World } from './world';
import { SCHEDULE_NAMES, type Declares } from './recurring';

/** A command of the model. */
export type Command = fc.AsyncCommand<object, World>;

/** A script without its id. */
export type Plan = Omit<Script, 'id'>;

/** The base of every command: act, then restart the dead and look at the store. */
abstract class Op implements Command {
  check(): boolean {
    return true;
  }

  async run(_model: object, world: World): Promise<void> {
    world.operations++;
    await this.act(world);
    world.restartDead();
    await world.look();
  }

  abstract act(world: World): Promise<void>;
  abstract toString(): string;
}

function plan(p: Plan): string {
  const parts: string[] = [p.fan ? `fanOut([${p.fan.children.join(', ')}${p.fan.wide ? ', w0…' : ''}]${p.fan.reverse ? ' reversed' : ''}${p.fan.throwAt !== undefined ? `, source throws at ${p.fan.throwAt}` : ''}, ${p.fan.policy})` : p.finish];
  if (p.again) parts.push('or as the step\'s last run ended');
  if (p.block !== 'none') parts.push(`blocks ${p.block}`, `on signal ${p.onSignal}`);
  return parts.join(', ');
}

/** The `pick`-th task (modulo their number) of `World.taskNames(late)`; undefined when there is none. */
function taskAt(w: World, pick: number, late: boolean): string | undefined {
  const names = w.taskNames(late);
  return names.length === 0 ? undefined : names[pick % names.length];
}

/** `locker.schedule(entity)` on an instance (`firstOnly`: only if no kickoff of the sequence touched the entity yet). */
export class Kickoff extends Op {
  constructor(readonly entity: string, readonly slot: number, readonly firstOnly = false) { super(); }
  act(w: World): Promise<void> { return this.firstOnly && w.kickedOff.has(this.entity) ? Promise.resolve() : w.kickoff(this.entity, w.at(this.slot)); }
  toString(): string { return `schedule(${this.entity}) on slot ${this.slot}`; }
}

/** `locker.scheduleMany(entities, { kickoffId })` on an instance (`firstOnly`: of the entities no kickoff touched yet). */
export class KickoffMany extends Op {
  constructor(readonly entities: readonly string[], readonly kickoffId: string | undefined, readonly slot: number, readonly firstOnly = false) { super(); }
  async act(w: World): Promise<void> {
    const entities = this.firstOnly ? this.entities.filter((e) => !w.kickedOff.has(e)) : this.entities;
    if (entities.length > 0) await w.kickoffMany(entities, this.kickoffId, w.at(this.slot));
  }
  toString(): string { return `scheduleMany([${this.entities.join(', ')}], ${this.kickoffId ?? 'fresh id'}) on slot ${this.slot}`; }
}

/** Delivers an open task (or, `late`, any task ever created: a late duplicate) to an instance. */
export class Deliver extends Op {
  constructor(readonly pick: number, readonly slot: number, readonly plan: Plan, readonly late: boolean) { super(); }
  async act(w: World): Promise<void> {
    const name = taskAt(w, this.pick, this.late);
    if (name !== undefined) await w.deliver(name, w.at(this.slot), this.plan);
  }
  toString(): string { return `deliver(${this.late ? 'any' : 'open'} task #${this.pick} to slot ${this.slot}: ${plan(this.plan)})`; }
}

/** Delivers the newest open task of an entity's steps to an instance (scenarios name their tasks this way). */
export class DeliverOf extends Op {
  constructor(readonly entity: string, readonly slot: number, readonly plan: Plan) { super(); }
  async act(w: World): Promise<void> {
    const name = w.openTaskOf(this.entity);
    if (name !== undefined) await w.deliver(name, w.at(this.slot), this.plan);
  }
  toString(): string { return `deliver(${this.entity}'s open task to slot ${this.slot}: ${plan(this.plan)})`; }
}

/** Delivers one open task twice at once, to two instances (or one): a concurrent duplicate. */
export class DeliverTwice extends Op {
  constructor(readonly pick: number, readonly slots: [number, number], readonly plans: [Plan, Plan]) { super(); }
  async act(w: World): Promise<void> {
    const name = taskAt(w, this.pick, false);
    if (name === undefined) return;
    const both = [w.start(name, w.at(this.slots[0]), this.plans[0]), w.start(name, w.at(this.slots[1]), this.plans[1])];
    await Promise.all(both.map((d) => w.settle(d)));
  }
  toString(): string { return `deliverTwice(open task #${this.pick} to slots ${this.slots.join(' and ')}: ${plan(this.plans[0])} | ${plan(this.plans[1])})`; }
}

/**
 * A takeover, as the platform makes one: a run's instance gets no CPU (Cloud Run throttles it
 * between requests, or the VM stalls) from a wait before or after its effect until its lease ran
 * out, and Cloud Tasks, its dispatch deadline passed, delivers the same open task again, to the
 * same instance or another. The frozen run stays waiting for the model (a later release or cut
 * thaws it). Three commands' worth (a blocked delivery, the clock past the lease, the delivery
 * again) as one: the overwrite paths are where fan-out meets alerts (defect 3 of issue 37).
 */
export class Takeover extends Op {
  constructor(readonly pick: number, readonly slots: [number, number], readonly plans: [Plan, Plan]) { super(); }
  async act(w: World): Promise<void> {
    const name = taskAt(w, this.pick, false);
    if (name === undefined) return;
    await w.settle(w.start(name, w.at(this.slots[0]), this.plans[0]));
    w.advance(TIMINGS.leaseDuration + 1_000);
    w.restartDead();
    await w.deliver(name, w.at(this.slots[1]), this.plans[1]);
  }
  toString(): string {
    return `takeover(open task #${this.pick}: slot ${this.slots[0]} frozen past the lease in ${plan(this.plans[0])}; again to slot ${this.slots[1]}: ${plan(this.plans[1])})`;
  }
}

/** Lets a run waiting for the model go on. */
export class Release extends Op {
  constructor(readonly pick: number) { super(); }
  async act(w: World): Promise<void> {
    const waiting = w.waitingRuns();
    if (waiting.length > 0) await w.release(waiting[this.pick % waiting.length]!);
  }
  toString(): string { return `release(waiting run #${this.pick})`; }
}

/** The time limit cuts a waiting run (near `requestTimeout`, in real time), where the sequence sets one. */
export class Cut extends Op {
  constructor(readonly pick: number) { super(); }
  async act(w: World): Promise<void> {
    const waiting = w.waitingRuns();
    if (waiting.length > 0) await w.cut(waiting[this.pick % waiting.length]!);
  }
  toString(): string { return `cut(waiting run #${this.pick} at requestTimeout)`; }
}

/** Moves the model's clock. */
export class Advance extends Op {
  constructor(readonly ms: number) { super(); }
  async act(w: World): Promise<void> { w.advance(this.ms); }
  toString(): string { return `advance(${this.ms / 1000} s)`; }
}

/** `locker.sweep()` on an instance. */
export class Sweep extends Op {
  constructor(readonly slot: number) { super(); }
  async act(w: World): Promise<void> { await w.sweep(w.at(this.slot)); }
  toString(): string { return `sweep() on slot ${this.slot}`; }
}

/** An instance dies now, at its next write, or at its next task creation. */
export class Kill extends Op {
  constructor(readonly slot: number, readonly point: KillPoint) { super(); }
  async act(w: World): Promise<void> { w.kill(this.slot, this.point); }
  toString(): string { return `kill(slot ${this.slot}, ${this.point})`; }
}

/** `locker.shutdown()` on an instance, which then restarts. */
export class Shutdown extends Op {
  constructor(readonly slot: number) { super(); }
  act(w: World): Promise<void> { return w.shutdown(this.slot); }
  toString(): string { return `shutdown(slot ${this.slot})`; }
}

/** An operator's retry, cancel or resend. */
export class Operate extends Op {
  constructor(readonly action: 'retry' | 'cancel' | 'resend', readonly entity: string, readonly slot: number) { super(); }
  act(w: World): Promise<void> { return w.operate(this.action, this.entity, w.at(this.slot)); }
  toString(): string { return `${this.action}(${this.entity}) on slot ${this.slot}`; }
}

/**
 * The operator acts on a chain in trouble (`World.troubled()`), the `pick`-th of them when the
 * command runs: retries it where it failed for good (the one action a failed chain takes), else
 * (a step owing an alert) cancels or re-sends it; nothing when none is in trouble.
 */
export class OperateOnTrouble extends Op {
  /** `retries` false (`--without retry`): a failed chain gets `otherwise` too (and refuses it). */
  constructor(readonly otherwise: 'cancel' | 'resend', readonly pick: number, readonly slot: number, readonly retries = true) { super(); }
  async act(w: World): Promise<void> {
    const troubled = w.troubled();
    if (troubled.length === 0) return;
    const entity = troubled[this.pick % troubled.length]!;
    await w.operate(this.retries && w.failed(entity) ? 'retry' : this.otherwise, entity, w.at(this.slot));
  }
  toString(): string { return `retry, or else ${this.otherwise}, chain in trouble #${this.pick} on slot ${this.slot}`; }
}

/** An operator's bulk action (`locker.bulk()`): retry every failed chain, or resend the stalled steps, under an id that may repeat (a confirmation posted twice). */
export class Bulk extends Op {
  constructor(readonly action: 'retry' | 'resend', readonly id: string, readonly slot: number) { super(); }
  act(w: World): Promise<void> { return w.bulk(this.action, this.id, w.at(this.slot)); }
  toString(): string { return `bulk(${this.action}, ${this.id}) on slot ${this.slot}`; }
}

/** A request forged of a kept task (any ever created), delivered to an instance: another route, query, prefix, body or seq. */
export class Forge extends Op {
  constructor(readonly pick: number, readonly slot: number, readonly how: Forgery) { super(); }
  async act(w: World): Promise<void> {
    const name = taskAt(w, this.pick, true);
    if (name !== undefined) await w.deliverForged(name, w.at(this.slot), this.how);
  }
  toString(): string { return `forge(task #${this.pick} as ${this.how}, to slot ${this.slot})`; }
}

/** The app deletes an entity (a fan-out child's, say) with its own client. */
export class Delete extends Op {
  constructor(readonly entity: string) { super(); }
  act(w: World): Promise<void> { return w.deleteEntity(this.entity); }
  toString(): string { return `the app deletes ${this.entity}`; }
}

/**
 * The operator acts on a fan-out the status page shows waiting (`World.waitingParents()`), the
 * `pick`-th of them when the command runs: cancels it (with or without the join) or retries its
 * failed children; nothing when no parent waits at its join.
 */
export class OperateOnFanOut extends Op {
  constructor(readonly action: FanOutAction, readonly pick: number, readonly slot: number) { super(); }
  async act(w: World): Promise<void> {
    const waiting = w.waitingParents();
    if (waiting.length > 0) await w.fanOutAction(this.action, waiting[this.pick % waiting.length]!, w.at(this.slot));
  }
  toString(): string { return `${this.action === 'cancelFanOut+join' ? 'cancelFanOut({ join: true })' : `${this.action}()`} of waiting fan-out #${this.pick} on slot ${this.slot}`; }
}

/** An operator's `cancelFanOut()` (with or without the join) or `retryFanOutChildren()` on an entity's fan-out. */
export class FanOutOp extends Op {
  constructor(readonly action: FanOutAction, readonly entity: string, readonly slot: number) { super(); }
  act(w: World): Promise<void> { return w.fanOutAction(this.action, this.entity, w.at(this.slot)); }
  toString(): string { return `${this.action === 'cancelFanOut+join' ? 'cancelFanOut({ join: true })' : `${this.action}()`} of ${this.entity}'s fan-out on slot ${this.slot}`; }
}

/** The alerter goes down or comes back. */
export class Alerter extends Op {
  constructor(readonly up: boolean) { super(); }
  async act(w: World): Promise<void> { w.desk.setUp(this.up); }
  toString(): string { return `alerter ${this.up ? 'up' : 'down'}`; }
}

/** The next operations on the store fail; writes are applied first when `applied` (the answer was lost). */
export class StoreOutage extends Op {
  constructor(readonly count: number, readonly applied: boolean) { super(); }
  async act(w: World): Promise<void> { w.store.outage(this.count, this.applied); }
  toString(): string { return `store outage(next ${this.count} operation(s)${this.applied ? ', writes applied' : ''})`; }
}

/**
 * `locker.tick()` on instances, all at once (a slot named twice ticks twice at once). With
 * `dieAfterWrites`, the first instance dies just after that many writes. With its declarations
 * unchanged (a tick writes them only when new, changed or due a refresh: one write more then): 1,
 * past its plan (its runs pending, none started); 2, inside its kickoff; 4, past its kickoff (its
 * tasks created), before its settle.
 */
export class Tick extends Op {
  constructor(readonly slots: readonly number[], readonly dieAfterWrites?: number) { super(); }
  act(w: World): Promise<void> { return w.tick(this.slots, this.dieAfterWrites); }
  toString(): string {
    return `tick() on slot${this.slots.length > 1 ? 's' : ''} ${this.slots.join(', ')}${this.slots.length > 1 ? ' at once' : ''}${this.dieAfterWrites === undefined ? '' : `, slot ${this.slots[0]} dying just after its write ${this.dieAfterWrites}`}`;
  }
}

/** An operator's `pauseSchedule()` or `resumeSchedule()`. */
export class Control extends Op {
  constructor(readonly action: 'pause' | 'resume', readonly schedule: string, readonly slot: number) { super(); }
  act(w: World): Promise<void> { return w.control(this.action, this.schedule, w.at(this.slot)); }
  toString(): string { return `${this.action}Schedule(${this.schedule}) on slot ${this.slot}`; }
}

/** An operator's `runScheduleNow()` under an id that may repeat (a confirm page posted twice), or a fresh one. */
export class RunNow extends Op {
  private static fresh = 0;
  constructor(readonly schedule: string, readonly id: string | undefined, readonly slot: number) { super(); }
  act(w: World): Promise<void> { return w.runNow(this.schedule, this.id ?? `fresh-${++RunNow.fresh}`, w.at(this.slot)); }
  toString(): string { return `runScheduleNow(${this.schedule}, ${this.id ?? 'fresh id'}) on slot ${this.slot}`; }
}

/** A deploy: the slot's instance is replaced by one running the old code (every schedule declared) or the new (`r-old` left out). */
export class Declare extends Op {
  constructor(readonly slot: number, readonly code: Declares) { super(); }
  async act(w: World): Promise<void> { w.redeploy(this.slot, this.code); }
  toString(): string { return `deploy the ${this.code} code on slot ${this.slot} (${this.code === 'old' ? 'every schedule declared' : 'r-old left out'})`; }
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

/**
 * What a run can leave out of its sequences (`--without`), to look past a counterexample it keeps
 * finding: results the store refuses, the email alerter (and its rate limit), handlers that stop
 * after their effect, the operator's cancel and retry, repeated kickoff ids, a second kickoff on an
 * entity (`rekickoff`: only entities no kickoff of the sequence touched yet are kicked off), the
 * alerter going down, fan-out (`fanout`: runs that fan out or set a result, the operator's fan-out
 * actions, the app deleting an entity, and the kill just after a write; `fanout-throw`: only
 * sources that never throw and name no child twice; `fanout-wide`: no fan-out past a page;
 * `delete`: the app never deletes an entity; `kill-after-write`: no death just after a write;
 * `time-limit`: no sequence sets `requestTimeout`, so no step is cut at it), the operator's bulk actions (`bulk`), forged requests (`forge`; `forge-path`:
 * only those to another path or query; `forge-seq`: only those to another seq), and store
 * outages (`outage`), and recurring work (`recurring`: no schedule is declared, and no tick,
 * pause, resume, run-now or deploy command is drawn).
 */
export const FEATURES = [
  'refusal', 'email', 'stop-after', 'cancel', 'retry', 'kickoff-id', 'rekickoff', 'alerter-down', 'fanout', 'fanout-throw', 'fanout-wide', 'delete', 'kill-after-write', 'time-limit', 'forge', 'forge-path', 'forge-seq', 'outage', 'bulk', 'recurring',
] as const;
export type Feature = (typeof FEATURES)[number];

const slot = fc.nat({ max: 2 });
/** The entities the commands of the model before fan-out act on; fan-out adds the fourth (children need room). */
const entity = fc.constantFrom(...ENTITIES.slice(0, 3));
const anyEntity = fc.constantFrom(...ENTITIES);

/** A fanning run's script: 1 to 4 children (now and then one named twice), sometimes wide, an order, a throw part-way, a policy. */
function fanSpecArb(without: ReadonlySet<Feature>): fc.Arbitrary<FanSpec> {
  const throws = !without.has('fanout-throw');
  return fc.record({
    children: fc.oneof(
      { arbitrary: fc.uniqueArray(anyEntity, { minLength: 1, maxLength: 4 }), weight: 9 },
      { arbitrary: throws ? anyEntity.map((e) => [e, e]) : fc.uniqueArray(anyEntity, { minLength: 1, maxLength: 4 }), weight: 1 },
    ),
    wide: without.has('fanout-wide') ? fc.constant(false) : fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 }),
    reverse: fc.boolean(),
    throwAt: throws ? fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, { arbitrary: fc.constantFrom(1, 2, 100), weight: 1 }) : fc.constant(undefined),
    policy: fc.constantFrom(...POLICIES),
  }).map((spec) => (spec.wide && spec.throwAt !== undefined ? { ...spec, throwAt: 100 } : spec)); // a wide source throws after its first page was written and started
}

function planArb(without: ReadonlySet<Feature>): fc.Arbitrary<Plan> {
  const refusals = FINISHES.filter((f) => f.startsWith('refuse') && !without.has('refusal'));
  const fanning = without.has('fanout') ? [] : [
    { arbitrary: fc.constantFrom<Plan['finish']>('result'), weight: 2 },
    { arbitrary: fc.constantFrom<Plan['finish']>('fanout'), weight: 3 },
  ];
  return fc.record({
    finish: fc.oneof(
      { arbitrary: fc.constantFrom<Plan['finish']>('return', 'schedule', 'complete'), weight: 6 },
      { arbitrary: fc.constantFrom<Plan['finish']>('throw'), weight: 2 },
      { arbitrary: fc.constantFrom<Plan['finish']>('permanent'), weight: 2 },
      ...(refusals.length > 0 ? [{ arbitrary: fc.constantFrom<Plan['finish']>(...refusals), weight: 1 }] : []),
      ...fanning,
    ),
    fan: fanSpecArb(without),
    block: fc.oneof({ arbitrary: fc.constant<Plan['block']>('none'), weight: 4 }, { arbitrary: fc.constantFrom<Plan['block']>(...BLOCKS.filter((b) => b !== 'none')), weight: 2 }),
    onSignal: fc.constantFrom(...ON_SIGNAL.filter((o) => !(without.has('stop-after') && o === 'stop-after'))),
    // One run in three ends as its step's last run did (a handler that fails the same way each time, a retried poison message).
    again: fc.oneof({ arbitrary: fc.constant(false), weight: 2 }, { arbitrary: fc.constant(true), weight: 1 }),
  }).map(({ fan, again, ...p }) => {
    const out: Plan = { ...(p.finish === 'fanout' ? { ...p, fan } : p), ...(again ? { again } : {}) };
    return stopsAfter(without, out);
  });
}

/** Past its effect, any stop is a stop after it: without `stop-after`, a run waiting after its effect ignores the signal. */
function stopsAfter(without: ReadonlySet<Feature>, p: Plan): Plan {
  return without.has('stop-after') && p.block === 'after-effect' && p.onSignal !== 'ignore' ? { ...p, onSignal: 'ignore' } : p;
}

/** Every command's arbitrary, less the features left out (deliveries listed more than once: they are most of what happens). */
export function commandArbitraries(without: ReadonlySet<Feature> = new Set()): Array<fc.Arbitrary<Command>> {
  const plan = planArb(without);
  const open = fc.tuple(fc.nat({ max: 7 }), slot, plan).map(([p, s, pl]) => new Deliver(p, s, pl, false));
  const actions = (['retry', 'resend', 'cancel'] as const).filter((a) => !((without.has('cancel') && a === 'cancel') || (without.has('retry') && a === 'retry')));
  const otherwise = (['cancel', 'resend'] as const).filter((a) => !(without.has('cancel') && a === 'cancel'));
  const onTrouble = fc.tuple(fc.constantFrom(...otherwise), fc.nat({ max: 3 }), slot).map(([a, p, s]) => new OperateOnTrouble(a, p, s, !without.has('retry')));
  const firstOnly = without.has('rekickoff');
  const ids = without.has('kickoff-id') ? [undefined] : ['K1', 'K2', undefined];
  const kickoff = fc.tuple(entity, slot).map(([e, s]) => new Kickoff(e, s, firstOnly));
  const kickoffMany = fc.tuple(fc.uniqueArray(entity, { minLength: 1, maxLength: 3 }), fc.constantFrom(...ids), slot).map(([es, k, s]) => new KickoffMany(es, k, s, firstOnly));
  return [
    // Kickoffs twice each: another chain on an entity, and a kickoff id used again, are what defects 1 and 2 needed.
    kickoff, kickoff,
    kickoffMany, kickoffMany,
    open, open, open,
    fc.tuple(fc.nat({ max: 7 }), slot, plan, fc.boolean()).map(([p, s, pl, late]) => new Deliver(p, s, pl, late)),
    fc.tuple(fc.nat({ max: 7 }), fc.tuple(slot, slot), fc.tuple(plan, plan)).map(([p, s, pl]) => new DeliverTwice(p, s, pl)),
    takeoverOf(fc.tuple(plan, plan), without),
    fc.nat({ max: 3 }).map((p) => new Release(p)),
    fc.nat({ max: 3 }).map((p) => new Release(p)),
    fc.constantFrom(1_000, TIMINGS.leaseDuration + 1_000, TIMINGS.stallAfter + 10_000).map((ms) => new Advance(ms)),
    slot.map((s) => new Sweep(s)),
    fc.tuple(slot, fc.constantFrom<KillPoint>('now', 'next-write', 'next-enqueue')).map(([s, p]) => new Kill(s, p)),
    slot.map((s) => new Shutdown(s)),
    fc.tuple(fc.constantFrom(...actions), entity, slot).map(([a, e, s]) => new Operate(a, e, s)),
    fc.tuple(fc.constantFrom(...actions), entity, slot).map(([a, e, s]) => new Operate(a, e, s)),
    // An operator acts most on what the status page shows in trouble: a failed chain, a step owing an alert.
    onTrouble, onTrouble,
    ...(without.has('bulk') ? [] : [fc.tuple(fc.constantFrom<'retry' | 'resend'>(...(without.has('retry') ? ['resend' as const] : ['retry' as const, 'resend' as const])), fc.constantFrom('model-bulk-1', 'model-bulk-2'), slot).map(([a, id, s]) => new Bulk(a, id, s))]),
    // Down more often than up: quiet() brings it back, and most owed alerts need it down for a while.
    (without.has('alerter-down') ? fc.constant(true) : fc.oneof({ arbitrary: fc.constant(false), weight: 3 }, { arbitrary: fc.constant(true), weight: 1 })).map((up) => new Alerter(up)),
    ...(without.has('outage') ? [] : [fc.tuple(fc.integer({ min: 1, max: 4 }), fc.boolean()).map(([n, applied]) => new StoreOutage(n, applied))]),
    ...(without.has('fanout') ? [] : fanOutCommands(plan, fanSpecArb(without), actions, without)),
    ...forgeries(without),
    ...(without.has('recurring') ? [] : recurringCommands()),
  ];
}

/** A takeover of an open task, its two runs' plans drawn from `plans`: the frozen run waits before or after its effect; the delivery that takes over runs through (a wait there adds nothing a later command cannot). */
function takeoverOf(plans: fc.Arbitrary<[Plan, Plan]>, without: ReadonlySet<Feature>): fc.Arbitrary<Command> {
  return fc.tuple(fc.nat({ max: 7 }), fc.tuple(slot, slot), plans, fc.constantFrom<Plan['block']>('before-effect', 'after-effect'))
    .map(([p, s, [frozen, again], block]) => new Takeover(p, s, [stopsAfter(without, { ...frozen, block }), { ...again, block: 'none' }]));
}

/** Recurring work's commands: ticks and the clock moved by less than a minute (twice each: they are what drives it), pause and resume, run-now (twice), a deploy. */
function recurringCommands(): Array<fc.Arbitrary<Command>> {
  const dies = fc.oneof({ arbitrary: fc.constant(undefined), weight: 1 }, { arbitrary: fc.constantFrom(1, 2, 4), weight: 1 });
  const ticks = fc.tuple(fc.array(slot, { minLength: 1, maxLength: 3 }), dies).map(([slots, n]) => new Tick(slots, n));
  const schedule = fc.constantFrom(...SCHEDULE_NAMES);
  // An id used again more often than not: a confirm page posted twice is what run-now's id is for.
  const nowId = fc.oneof({ arbitrary: fc.constant<string | undefined>('now-1'), weight: 3 }, { arbitrary: fc.constant('now-2'), weight: 1 }, { arbitrary: fc.constant(undefined), weight: 1 });
  const runNow = fc.tuple(schedule, nowId, slot).map(([n, id, s]) => new RunNow(n, id, s));
  const advance = fc.constantFrom(20_000, 45_000).map((ms) => new Advance(ms));
  return [
    ticks, ticks,
    advance, advance,
    fc.tuple(fc.constantFrom<'pause' | 'resume'>('pause', 'resume'), schedule, slot).map(([a, n, s]) => new Control(a, n, s)),
    runNow, runNow,
    fc.tuple(slot, fc.constantFrom<Declares>('old', 'new')).map(([s, code]) => new Declare(s, code)),
  ];
}

/** The forged requests left in. */
function forgeries(without: ReadonlySet<Feature>): Array<fc.Arbitrary<Command>> {
  const kinds = FORGERIES.filter((k) => !(without.has('forge-path') && (k === 'query' || k === 'prefix')) && !(without.has('forge-seq') && k.startsWith('seq')));
  if (without.has('forge') || kinds.length === 0) return [];
  return [fc.tuple(fc.nat({ max: 15 }), slot, fc.constantFrom(...kinds)).map(([p, s, how]) => new Forge(p, s, how))];
}

/** The fan-out commands: deliveries that fan out (more of them: they are most of what a fan-out is), the operator's actions on a child, a parent and a fan-out, the app's deletes and kickoffs on any entity, a death just after a write. */
function fanOutCommands(
  plan: fc.Arbitrary<Plan>, fanSpec: fc.Arbitrary<FanSpec>, actions: ReadonlyArray<'retry' | 'resend' | 'cancel'>, without: ReadonlySet<Feature>,
): Array<fc.Arbitrary<Command>> {
  const fanningPlan = fc.tuple(plan, fanSpec).map(([pl, fan]): Plan => ({ ...pl, finish: 'fanout', fan }));
  const fanning = fc.tuple(fc.nat({ max: 7 }), slot, fanningPlan).map(([p, s, pl]) => new Deliver(p, s, pl, false));
  const fanActions = (['cancelFanOut', 'cancelFanOut+join', 'retryFanOutChildren'] as const).filter((a) => actions.includes('cancel') || a === 'retryFanOutChildren');
  return [
    fanning,
    // A takeover of a step that fans out (both runs are the step's handler, so both fan out): a long step, its children written page
    // by page, is the kind that outlives its lease; the delivery that takes over seals the fan-out with the overwrite alert it claimed.
    takeoverOf(fc.tuple(fanningPlan, fanningPlan), without),
    fc.tuple(fc.constantFrom(...fanActions), anyEntity, slot).map(([a, e, s]) => new FanOutOp(a, e, s)),
    // The operator acts on what the status page shows: a fan-out whose parent waits at its join.
    fc.tuple(fc.constantFrom(...fanActions), fc.nat({ max: 3 }), slot).map(([a, p, s]) => new OperateOnFanOut(a, p, s)),
    fc.tuple(fc.constantFrom(...actions), anyEntity, slot).map(([a, e, s]) => new Operate(a, e, s)),
    fc.tuple(anyEntity, slot).map(([e, s]) => new Kickoff(e, s)),
    ...(without.has('delete') ? [] : [anyEntity.map((e) => new Delete(e))]),
    ...(without.has('time-limit') ? [] : [fc.nat({ max: 3 }).map((p) => new Cut(p))]),
    ...(without.has('kill-after-write') ? [] : [slot.map((s) => new Kill(s, 'after-next-write'))]),
  ];
}

/** The `requestTimeout` of a sequence that cuts steps at it: the least the Locker takes, so a cut comes a second after the request arrived. */
export const REQUEST_TIMEOUT = 2_000;

/** A sequence's configuration. */
export function configArbitrary(without: ReadonlySet<Feature> = new Set()): fc.Arbitrary<SequenceConfig> {
  return fc.record({
    instances: fc.constantFrom(2, 3),
    alerter: without.has('email') ? fc.constant<SequenceConfig['alerter']>('record') : fc.constantFrom<SequenceConfig['alerter']>('record', 'email'),
    maxRetries: fc.constantFrom(1, 2, 3),
    recurring: fc.constant(!without.has('recurring')),
    // One sequence in three begins inside an alerting outage: most owed alerts need the alerter down while a step claims them.
    alerterDown: without.has('alerter-down') ? fc.constant(false) : fc.oneof({ arbitrary: fc.constant(false), weight: 2 }, { arbitrary: fc.constant(true), weight: 1 }),
  }).chain((c) => (without.has('fanout') || without.has('time-limit')
    ? fc.constant<SequenceConfig>(c)
    : fc.oneof(
      { arbitrary: fc.constant<SequenceConfig>(c), weight: 5 },
      { arbitrary: fc.constant<SequenceConfig>({ ...c, requestTimeout: REQUEST_TIMEOUT }), weight: 1 },
    )));
}

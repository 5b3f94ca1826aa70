/**
 * The two chains the example runs, ported from the Go library's example:
 *
 * - a counter that schedules itself, one step after another, up to {@link COUNTER_STEPS} steps;
 *   once step {@link FORGED_STEP} has run, the app sends a forged duplicate of it through the
 *   queue (same `X-Lock-Key` and `X-Lock-Seq`, another task name), which the Locker drops;
 * - an order: charge the card, then email the receipt, then archive it, three steps of one chain
 *   on three handler paths. The first charge attempt of every order fails, to show a retry;
 *   the orders the "declined" button starts (one `scheduleMany()` of {@link DECLINED_ORDERS}) fail
 *   for good instead, to show the Failed list and Retry (one by one, or all at once): retried,
 *   their charge goes through;
 * - an order with line items (`line-order.ts`): a fan-out of one child chain per line item, joined
 *   into one invoice as the order's next step;
 * - recurring work (`report.ts`): the `heartbeat-report` schedule starts a one-step chain every
 *   minute, from the sweep's ticks.
 *
 * Each step records its side effect in the store (`records.ts`), so the status page can show that
 * every step ran once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import express, { type Router } from 'express';
import type { Key } from '@google-cloud/datastore';
import { Headers, keyPath, PermanentError, type Properties, type TaskContext } from '../src/index';
import type { ChainDeps } from './chain-deps';
import type { ChainRef } from './records';
import { mountLineOrder, startLineOrder } from './line-order';
import { mountReport } from './report';

/** Steps of a counter chain. */
export const COUNTER_STEPS = 10;
/** The counter step whose forged duplicate the app sends once it has run. */
export const FORGED_STEP = 6;

/** The handler paths of the chains' steps. */
export const PATHS = Object.freeze({
  counter: '/tasks/counter',
  charge: '/tasks/order/charge',
  email: '/tasks/order/email',
  archive: '/tasks/order/archive',
});

/** Counter chains the "start many" button starts with one `scheduleMany()` call. */
export const MANY_COUNTERS = 1_000;

/** Orders the "declined" button starts with one `scheduleMany()` call: their first charge fails for good. */
export const DECLINED_ORDERS = 100;

/** What one `scheduleMany()` of counter chains did. */
export interface ManyStarted {
  kickoffId: string;
  started: number;
  busy: number;
  failed: number;
}

/** What the app calls each kind of chain, in logs and on the status page. */
export const CHAIN_LABELS: Readonly<Record<string, string>> = Object.freeze({ Counter: 'counter', Order: 'order', LineOrder: 'line-order', LineItem: 'line-item' });

/** A counter chain's entity. */
export class Counter {
  /** The last step that ran. */
  count: number;
  constructor(props: Properties) {
    this.count = typeof props.count === 'number' ? props.count : 0;
  }
}

/** An order chain's entity. */
export class Order {
  item: string;
  amountCents: number;
  email: string;
  /** Set by the charge step. */
  chargeId: string;
  /** Set by the email step. */
  receiptSent: boolean;
  /** Set by the archive step. */
  archived: boolean;
  /** The card is declined for good on the first charge (the step fails; an operator's retry charges it). */
  declinedForGood: boolean;
  constructor(props: Properties) {
    this.item = typeof props.item === 'string' ? props.item : '';
    this.amountCents = typeof props.amountCents === 'number' ? props.amountCents : 0;
    this.email = typeof props.email === 'string' ? props.email : '';
    this.chargeId = typeof props.chargeId === 'string' ? props.chargeId : '';
    this.receiptSent = props.receiptSent === true;
    this.archived = props.archived === true;
    this.declinedForGood = props.declinedForGood === true;
  }
}

/** The chains: their handler routes, and how to start one. */
export interface Chains {
  /** The task handlers, to mount on the app. */
  readonly router: Router;
  startCounter(): Promise<ChainRef>;
  startOrder(): Promise<ChainRef>;
  /** Starts an order with line items: a fan-out of one chain per line, joined into its invoice. */
  startLineOrder(): Promise<ChainRef>;
  /** Starts `count` new counter chains with one `locker.scheduleMany()` call. */
  startCounters(count: number): Promise<ManyStarted>;
  /** Starts `count` orders whose card is declined for good (one `scheduleMany()` call): each fails until retried. */
  startDeclinedOrders(count: number): Promise<ManyStarted>;
}

/** Builds the handlers and listens to the Locker's events for the forged duplicate and drops. */
export function createChains(deps: ChainDeps): Chains {
  const { locker, records, say } = deps;
  const router = express.Router();
  // all(), not post(): any other method gets handle()'s 405 (task requests are POSTs) rather than Express's 404.
  router.all(PATHS.counter, locker.handle<Counter>((ctx) => countStep(deps, ctx), (p) => new Counter(p), { kinds: ['Counter'] }));
  router.all(PATHS.charge, locker.handle<Order>((ctx) => chargeStep(deps, ctx), (p) => new Order(p), { kinds: ['Order'] }));
  router.all(PATHS.email, locker.handle<Order>((ctx) => emailStep(deps, ctx), (p) => new Order(p), { kinds: ['Order'] }));
  router.all(PATHS.archive, locker.handle<Order>((ctx) => archiveStep(deps, ctx), (p) => new Order(p), { kinds: ['Order'] }));
  mountLineOrder(router, deps);
  mountReport(router, deps); // the recurring heartbeat report: one run a minute, from the sweep's ticks

  locker.on('completed', (e) => {
    if (e.key.kind === 'Counter' && e.seq === FORGED_STEP) void forgeDuplicate(deps, e.key, e.seq);
  });
  locker.on('dropped', (e) => {
    const label = CHAIN_LABELS[e.key.kind];
    if (label === undefined) return;
    say(`${label} ${keyPath(e.key)} duplicate of step ${e.seq} dropped (${e.reason})`);
    records.countDrop(e.key, e.seq).catch((error: unknown) => say(`could not record the drop: ${String(error)}`));
  });

  return {
    router,
    startCounter: () => start(deps, 'Counter', new Counter({ count: 0 }), PATHS.counter),
    startOrder: () => start(deps, 'Order', new Order({ item: 'datastore-locker T-shirt', amountCents: 2_500, email: 'customer@example.com' }), PATHS.charge),
    startLineOrder: () => startLineOrder(deps),
    startCounters: (count) => startMany(deps, count),
    startDeclinedOrders: (count) => startDeclined(deps, count),
  };
}

/** Kicks a new chain off. */
async function start(deps: ChainDeps, kind: string, entity: Counter | Order, path: string): Promise<ChainRef> {
  const ref = { kind, name: `${CHAIN_LABELS[kind]}-${randomBytes(4).toString('hex')}` };
  const key = deps.records.chainKey(ref);
  await deps.locker.schedule(key, entity, path);
  deps.say(`${CHAIN_LABELS[kind]} ${keyPath(key)} started`);
  return ref;
}

/** Kicks off `count` new counter chains in one `scheduleMany()` call, and says how it went. */
async function startMany(deps: ChainDeps, count: number): Promise<ManyStarted> {
  const kickoffId = `counters-${randomBytes(4).toString('hex')}`;
  const items = Array.from({ length: count }, (_, i) => ({
    key: deps.records.chainKey({ kind: 'Counter', name: `${kickoffId}-${i + 1}` }),
    entity: new Counter({ count: 0 }),
    path: PATHS.counter,
  }));
  const result = await deps.locker.scheduleMany(items, { kickoffId });
  deps.say(`${count} counter chains kicked off at once (${kickoffId}): ${result.started} started, ${result.busy} busy, ${result.failed} failed`);
  return { kickoffId, started: result.started, busy: result.busy, failed: result.failed };
}

/** Kicks off `count` orders whose first charge fails for good, in one `scheduleMany()` call. */
async function startDeclined(deps: ChainDeps, count: number): Promise<ManyStarted> {
  const kickoffId = `declined-${randomBytes(4).toString('hex')}`;
  const items = Array.from({ length: count }, (_, i) => ({
    key: deps.records.chainKey({ kind: 'Order', name: `${kickoffId}-${i + 1}` }),
    entity: new Order({ item: 'datastore-locker mug', amountCents: 1_200, email: 'customer@example.com', declinedForGood: true }),
    path: PATHS.charge,
  }));
  const result = await deps.locker.scheduleMany(items, { kickoffId });
  deps.say(`${count} orders whose card is declined kicked off (${kickoffId}): ${result.started} started; each fails for good until retried`);
  return { kickoffId, started: result.started, busy: result.busy, failed: result.failed };
}

async function countStep(deps: ChainDeps, ctx: TaskContext<Counter>): Promise<void> {
  const effect = `counted step ${ctx.seq}`;
  await deps.records.countAttempt(ctx.key, ctx.seq, effect);
  ctx.entity.count = ctx.seq;
  await deps.records.countRun(ctx.key, ctx.seq, effect);
  deps.say(`counter ${keyPath(ctx.key)} step ${ctx.seq} ran`);
  if (ctx.seq < COUNTER_STEPS) await ctx.schedule(PATHS.counter);
}

async function chargeStep(deps: ChainDeps, ctx: TaskContext<Order>): Promise<void> {
  const attempts = await deps.records.countAttempt(ctx.key, ctx.seq, 'charged');
  if (attempts === 1 && ctx.entity.declinedForGood) {
    deps.say(`order ${keyPath(ctx.key)} step ${ctx.seq} charge declined for good; retry it from the status page`);
    throw new PermanentError('card declined for good: the demo gateway charges it once an operator retries the step');
  }
  if (attempts === 1) {
    deps.say(`order ${keyPath(ctx.key)} step ${ctx.seq} charge failed on attempt 1; it will be retried`);
    throw new Error('card declined: the demo payment gateway declines every first charge');
  }
  ctx.signal.throwIfAborted();
  ctx.entity.chargeId = `ch_${randomBytes(6).toString('hex')}`;
  await deps.records.countRun(ctx.key, ctx.seq, 'charged');
  deps.say(`order ${keyPath(ctx.key)} step ${ctx.seq} ran: charged ${(ctx.entity.amountCents / 100).toFixed(2)} on attempt ${attempts}`);
  await ctx.schedule(PATHS.email);
}

async function emailStep(deps: ChainDeps, ctx: TaskContext<Order>): Promise<void> {
  await deps.records.countAttempt(ctx.key, ctx.seq, 'emailed');
  ctx.entity.receiptSent = true;
  await deps.records.countRun(ctx.key, ctx.seq, 'emailed');
  deps.say(`order ${keyPath(ctx.key)} step ${ctx.seq} ran: emailed the receipt to ${ctx.entity.email}`);
  await ctx.schedule(PATHS.archive);
}

async function archiveStep(deps: ChainDeps, ctx: TaskContext<Order>): Promise<void> {
  await deps.records.countAttempt(ctx.key, ctx.seq, 'archived');
  ctx.entity.archived = true;
  await deps.records.countRun(ctx.key, ctx.seq, 'archived');
  deps.say(`order ${keyPath(ctx.key)} step ${ctx.seq} ran: archived`);
  // Returning without scheduling completes the chain.
}

/**
 * Sends a second task for a step that already ran, as a duplicate delivery by Cloud Tasks would
 * look: the step's key, sequence and chain, under another task name. The Locker drops it.
 */
async function forgeDuplicate(deps: ChainDeps, key: Key, seq: number): Promise<void> {
  try {
    const props = await deps.records.chainEntity(key);
    const chain = typeof props?.lock_chain === 'string' ? props.lock_chain : undefined;
    const name = `forged-${randomUUID()}`;
    await deps.queue.enqueue({
      name,
      path: PATHS.counter,
      headers: { [Headers.key]: deps.locker.encodeKey(key), [Headers.seq]: String(seq), ...(chain ? { [Headers.chain]: chain } : {}) },
      body: '',
    });
    deps.say(`counter ${keyPath(key)} step ${seq} ran, so the app sent a forged duplicate of it (task ${name})`);
  } catch (error) {
    deps.say(`counter ${keyPath(key)} could not send the forged duplicate: ${String(error)}`);
  }
}

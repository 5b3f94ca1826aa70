/**
 * The example's fan-out flow: an order with several line items.
 *
 * - Step 1 of the order (`LineOrder`) fans out with `ctx.fanOut()`: one child chain per line item,
 *   each on its own `LineItem` entity (a sibling of the order, named after it), and the invoice as
 *   the join.
 * - Each line item's chain prices the line in one step and sets its result (`ctx.setResult()`):
 *   the line's SKU, quantity and price in cents.
 * - Step 2 of the order is the join: it runs once, after every line item settled, reads every
 *   line's outcome and result from storage (`ctx.fanIn()`, a page at a time) and writes the
 *   invoice onto the order.
 *
 * Each step records its side effect in the store (`records.ts`), like the other chains, so the
 * status page shows that every step ran once; the invoice is a property of the order, shown on
 * the order's step detail with the fan-out's counts.
 */
import { randomBytes } from 'node:crypto';
import type { Router } from 'express';
import { keyPath, type FanInChild, type Properties, type TaskContext } from '../src/index';
import type { ChainDeps } from './chain-deps';
import type { ChainRef } from './records';

/** The handler paths of the fan-out flow's steps. */
export const LINE_ORDER_PATHS = Object.freeze({
  /** The order's step 1: fans out one child chain per line item. */
  split: '/tasks/line-order/split',
  /** A line item's one step: prices the line. */
  price: '/tasks/line-order/price',
  /** The order's step 2, the join: writes the invoice. */
  invoice: '/tasks/line-order/invoice',
});

/** One line of an order. */
export interface Line {
  sku: string;
  quantity: number;
  unitCents: number;
}

/** The lines of every order the app starts. */
export const DEMO_LINES: readonly Line[] = Object.freeze([
  { sku: 'datastore-locker T-shirt', quantity: 2, unitCents: 2_500 },
  { sku: 'datastore-locker mug', quantity: 1, unitCents: 1_200 },
  { sku: 'datastore-locker sticker', quantity: 5, unitCents: 150 },
]);

/** What a line item's chain sets as its result, and the invoice lists. */
export interface PricedLine {
  sku: string;
  quantity: number;
  cents: number;
}

/** The invoice the join writes onto the order, as JSON in its `invoice` property. */
export interface Invoice {
  /** The fan-out's outcome, as the join was told it. */
  outcome: string;
  /** Every line that was priced, in line order. */
  lines: PricedLine[];
  totalCents: number;
  /** Lines that failed, were cancelled or timed out, with why. */
  unpriced: Array<{ line: string; state: string; error: string }>;
}

/** An order with line items: the parent chain's entity. */
export class LineOrder {
  /** How many line items it has. */
  lines: number;
  /** Set by the join: the invoice as JSON (see {@link Invoice}); empty before. */
  invoice: string;
  constructor(props: Properties) {
    this.lines = typeof props.lines === 'number' ? props.lines : 0;
    this.invoice = typeof props.invoice === 'string' ? props.invoice : '';
  }
}

/** A line item: a child chain's entity. */
export class LineItem {
  /** The order's name. */
  order: string;
  /** The line's position in the order, from 1. */
  line: number;
  sku: string;
  quantity: number;
  /** Set by the line's step: its price in cents. */
  cents: number;
  constructor(props: Properties) {
    this.order = typeof props.order === 'string' ? props.order : '';
    this.line = typeof props.line === 'number' ? props.line : 0;
    this.sku = typeof props.sku === 'string' ? props.sku : '';
    this.quantity = typeof props.quantity === 'number' ? props.quantity : 0;
    this.cents = typeof props.cents === 'number' ? props.cents : 0;
  }
}

/** Mounts the flow's three handlers on `router`. */
export function mountLineOrder(router: Router, deps: ChainDeps): void {
  const { locker } = deps;
  // all(), not post(): any other method gets handle()'s 405 rather than Express's 404.
  router.all(LINE_ORDER_PATHS.split, locker.handle<LineOrder>((ctx) => splitStep(deps, ctx), (p) => new LineOrder(p), { kinds: ['LineOrder'] }));
  router.all(LINE_ORDER_PATHS.price, locker.handle<LineItem, Line>((ctx) => priceStep(deps, ctx), (p) => new LineItem(p), { kinds: ['LineItem'] }));
  router.all(LINE_ORDER_PATHS.invoice, locker.handle<LineOrder>((ctx) => invoiceStep(deps, ctx), (p) => new LineOrder(p), { kinds: ['LineOrder'] }));
}

/** Kicks a new order with the demo's line items off. */
export async function startLineOrder(deps: ChainDeps): Promise<ChainRef> {
  const ref = { kind: 'LineOrder', name: `line-order-${randomBytes(4).toString('hex')}` };
  const key = deps.records.chainKey(ref);
  await deps.locker.schedule(key, new LineOrder({ lines: DEMO_LINES.length, invoice: '' }), LINE_ORDER_PATHS.split);
  deps.say(`line-order ${keyPath(key)} started with ${DEMO_LINES.length} line items`);
  return ref;
}

/** The key of line `line` (from 1) of an order. */
function lineKey(deps: ChainDeps, order: string, line: number) {
  return deps.records.chainKey({ kind: 'LineItem', name: `${order}-line-${line}` });
}

async function splitStep(deps: ChainDeps, ctx: TaskContext<LineOrder>): Promise<void> {
  const effect = `split into ${DEMO_LINES.length} line items`;
  await deps.records.countAttempt(ctx.key, ctx.seq, effect);
  const order = String(ctx.key.name);
  // The step's effect comes before fanOut(), which is the step's finishing write (its seal): code
  // after it runs once the step has ended, so an effect there is lost if the process dies first.
  await deps.records.countRun(ctx.key, ctx.seq, effect);
  // Deterministic child keys: a retried step resumes the same fan-out and starts no child twice.
  const started = await ctx.fanOut(DEMO_LINES.map((line, i) => ({
    key: lineKey(deps, order, i + 1),
    path: LINE_ORDER_PATHS.price,
    payload: { sku: line.sku, quantity: line.quantity, unitCents: line.unitCents },
    entity: new LineItem({ order, line: i + 1, sku: line.sku, quantity: line.quantity }),
  })), { join: LINE_ORDER_PATHS.invoice });
  deps.say(`line-order ${keyPath(ctx.key)} step ${ctx.seq} ran: fanned out ${started.started} line items (fan-out ${started.id}); the invoice is step ${started.joinSeq}`);
}

async function priceStep(deps: ChainDeps, ctx: TaskContext<LineItem, Line>): Promise<void> {
  await deps.records.countAttempt(ctx.key, ctx.seq, 'priced');
  const { sku, quantity, unitCents } = ctx.payload;
  const cents = quantity * unitCents;
  ctx.entity.cents = cents;
  // Small, and stored with the child's record: the join reads it from storage.
  await ctx.setResult({ sku, quantity, cents });
  await deps.records.countRun(ctx.key, ctx.seq, 'priced');
  deps.say(`line-item ${keyPath(ctx.key)} step ${ctx.seq} ran: priced ${quantity} × ${sku} at ${(cents / 100).toFixed(2)}`);
  // Returning without scheduling ends the line's chain, which settles it in the order's fan-out.
}

async function invoiceStep(deps: ChainDeps, ctx: TaskContext<LineOrder>): Promise<void> {
  await deps.records.countAttempt(ctx.key, ctx.seq, 'invoiced');
  const fanIn = await ctx.fanIn();
  if (!fanIn) throw new Error('the invoice step runs only as the join of the order\'s fan-out');
  const children: FanInChild[] = [];
  let cursor: string | undefined;
  do {
    const page = await fanIn.children(cursor === undefined ? {} : { cursor });
    children.push(...page.children);
    cursor = page.cursor;
  } while (cursor !== undefined);
  const byLine = (c: FanInChild) => Number(String(c.key.name).split('-line-').pop());
  children.sort((a, b) => byLine(a) - byLine(b));
  const lines = children.filter((c) => c.state === 'succeeded').map((c) => c.result as unknown as PricedLine);
  const invoice: Invoice = {
    outcome: fanIn.outcome,
    lines,
    totalCents: lines.reduce((sum, l) => sum + l.cents, 0),
    unpriced: children.filter((c) => c.state !== 'succeeded').map((c) => ({ line: keyPath(c.key), state: c.state, error: c.error ?? '' })),
  };
  ctx.entity.invoice = JSON.stringify(invoice);
  await deps.records.countRun(ctx.key, ctx.seq, 'invoiced');
  deps.say(`line-order ${keyPath(ctx.key)} step ${ctx.seq} ran: invoiced ${lines.length} of ${children.length} line items, total ${(invoice.totalCents / 100).toFixed(2)} (${fanIn.outcome})`);
}

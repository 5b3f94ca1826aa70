/**
 * The example app's fan-out flow: `POST /start/line-order` starts an order whose first step fans
 * out one child chain per line item (each on its own `LineItem` entity); once every line settled,
 * the order's next step joins them into one invoice. The app runs as a child process, on the
 * in-memory store and on the Datastore emulator; the test reads its /status.json and the status
 * page's step detail of the order (`/step?key=`, `/step.json?key=`).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { DEMO_LINES, type Invoice } from '../../example-app/line-order';
import type { ChainStatus } from '../../example-app/status';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from '../support/example-process';

const LINE_COUNT = DEMO_LINES.length;
/** What each line item's chain sets as its result: the app prices a line at quantity × unit price. */
const PRICED = DEMO_LINES.map((l) => ({ sku: l.sku, quantity: l.quantity, cents: l.quantity * l.unitCents }));
const TOTAL = PRICED.reduce((sum, l) => sum + l.cents, 0);

interface StepJson {
  state: string;
  seq: number;
  properties: Record<string, unknown>;
  extra: Record<string, string>;
}

async function startLineOrder(url: string): Promise<{ kind: string; name: string }> {
  const res = await fetch(`${url}/start/line-order`, { method: 'POST', headers: { accept: 'application/json' } });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as { kind: string; name: string };
}

/** The order and its line items, once the order's chain completed and every line item's did. */
async function orderDone(url: string, name: string): Promise<{ order: ChainStatus; lines: ChainStatus[] }> {
  return waitFor(`line order ${name} and its ${LINE_COUNT} line items to complete`, async () => {
    const { chains } = await fetchStatus(url);
    const order = chains.find((c) => c.key === `LineOrder:${JSON.stringify(name)}`);
    const lines = chains.filter((c) => c.kind === 'LineItem' && c.key.startsWith(`LineItem:"${name}-line-`));
    return order?.state === 'complete' && lines.length === LINE_COUNT && lines.every((c) => c.state === 'complete') ? { order, lines } : undefined;
  }, 120_000);
}

function occurrences(text: string, pattern: RegExp): number {
  return text.match(new RegExp(pattern.source, 'gm'))?.length ?? 0;
}

/** Every check of one order's run, against the app at `app.url`. */
async function assertJoinedOnce(app: ExampleProcess, name: string): Promise<void> {
  const { order, lines } = await orderDone(app.url, name);

  // Each line item: an ordinary one-step chain on its own entity, its side effect run once.
  assert.deepEqual(lines.map((c) => c.key).sort(), DEMO_LINES.map((_, i) => `LineItem:${JSON.stringify(`${name}-line-${i + 1}`)}`).sort());
  for (const line of lines) {
    assert.equal(line.seq, 2, `${line.key} ran one step`);
    assert.deepEqual(line.steps.map(({ seq, effect, runs, attempts }) => ({ seq, effect, runs, attempts })), [{ seq: 1, effect: 'priced', runs: 1, attempts: 1 }], line.key);
  }

  // The order: the fan-out step, then the join, each run once.
  assert.equal(order.seq, 3, 'step 1 fanned out, step 2 joined, and the chain completed');
  assert.deepEqual(order.steps.map(({ seq, effect, runs, attempts, dropped }) => ({ seq, effect, runs, attempts, dropped })), [
    { seq: 1, effect: `split into ${LINE_COUNT} line items`, runs: 1, attempts: 1, dropped: 0 },
    { seq: 2, effect: 'invoiced', runs: 1, attempts: 1, dropped: 0 },
  ]);
  assert.equal(occurrences(app.stdout(), new RegExp(`^line-order LineOrder:"${name}" step 2 ran: invoiced `)), 1, 'the join ran once');
  assert.equal(occurrences(app.stdout(), new RegExp(`^line-item LineItem:"${name}-line-\\d+" step 1 ran: priced `)), LINE_COUNT, 'each line was priced once');
  assert.match(app.stdout(), new RegExp(`^line-order LineOrder:"${name}" step 2 ran: invoiced ${LINE_COUNT} of ${LINE_COUNT} line items, total ${(TOTAL / 100).toFixed(2)} \\(succeeded\\)$`, 'm'));

  // The order's step detail on the status page: the invoice with every line's result, and the side
  // effects. (The detail's fan-out view shows a fan-out while its parent waits or joins, at
  // `lock_seq - 1`; once the join completed the chain it is no longer shown, so it is not checked here.)
  const detail = (await (await fetch(`${app.url}/step.json?key=${encodeURIComponent(order.encodedKey)}`)).json()) as StepJson;
  assert.equal(detail.state, 'complete');
  assert.equal(typeof detail.properties.invoice, 'string');
  const invoice = JSON.parse(detail.properties.invoice as string) as Invoice;
  assert.deepEqual(invoice, { outcome: 'succeeded', lines: PRICED, totalCents: TOTAL, unpriced: [] });
  assert.equal(detail.extra['Side effects'], `1 split ×1 · 2 invoiced ×1`);
  const html = await (await fetch(`${app.url}/step?key=${encodeURIComponent(order.encodedKey)}`)).text();
  for (const line of PRICED) assert.ok(html.includes(line.sku), `the step page shows ${line.sku}`);
  assert.ok(html.includes(`totalCents\\&quot;:${TOTAL}`), 'the step page shows the invoice total');

  // A sweep after the join finds nothing to do, and the join does not run again.
  const swept = await fetch(`${app.url}/local/sweep`, { method: 'POST', headers: { accept: 'application/json' } });
  assert.equal(swept.status, 200);
  const again = (await fetchStatus(app.url)).chains.find((c) => c.key === order.key);
  assert.deepEqual(again?.steps.map((s) => s.runs), [1, 1]);
  assert.equal(occurrences(app.stdout(), new RegExp(`^line-order LineOrder:"${name}" step 2 ran: invoiced `)), 1, 'still once after a sweep');
}

describe('example app: an order with line items, fanned out and joined into one invoice', () => {
  let app: ExampleProcess | undefined;
  after(async () => { await app?.stop(); });

  it('shows the button, and refuses a start from another site, starting nothing', async () => {
    app = await startExample({ EXAMPLE_AUTOSTART: '0' });
    const html = await (await fetch(`${app.url}/`)).text();
    assert.match(html, /<form method="post" action="\/start\/line-order"><button type="submit">Start an order with line items \(fan-out\)<\/button><\/form>/);
    for (const headers of [{ 'sec-fetch-site': 'cross-site' }, { origin: 'https://evil.example' }] as Array<Record<string, string>>) {
      const res = await fetch(`${app.url}/start/line-order`, { method: 'POST', headers: { accept: 'application/json', ...headers } });
      assert.equal(res.status, 403, JSON.stringify(headers));
    }
    assert.deepEqual((await fetchStatus(app.url)).chains, []);
  });

  it(`runs each of the ${LINE_COUNT} line items as its own chain, then joins them into one invoice, once, with every line's result`, { timeout: 180_000 }, async () => {
    const ref = await startLineOrder(app!.url);
    assert.equal(ref.kind, 'LineOrder');
    assert.match(ref.name, /^line-order-[0-9a-f]{8}$/);
    await assertJoinedOnce(app!, ref.name);
  });

  it('answers a form with a redirect to the page', async () => {
    const form = await fetch(`${app!.url}/start/line-order`, { method: 'POST', headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }, body: '', redirect: 'manual' });
    assert.equal(form.status, 303);
    assert.equal(form.headers.get('location'), '/');
    assert.equal(await app!.stop(), 0);
    app = undefined;
  });
});

describe('example app on the Datastore emulator: the fan-out flow', { skip: process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)' }, () => {
  let app: ExampleProcess | undefined;
  after(async () => { await app?.stop(); });

  it('joins an order\'s line items into one invoice, once, with every line\'s result', { timeout: 180_000 }, async () => {
    app = await startExample({
      EXAMPLE_AUTOSTART: '0',
      DATASTORE_EMULATOR_HOST: process.env.DATASTORE_EMULATOR_HOST!,
      DATASTORE_PROJECT_ID: process.env.DATASTORE_PROJECT_ID ?? 'locker-test',
      EXAMPLE_NAMESPACE: `example-fan-${process.pid}-${Date.now()}`,
      METADATA_SERVER_DETECTION: 'none',
    });
    const ref = await startLineOrder(app.url);
    await assertJoinedOnce(app, ref.name);
    assert.equal(await app.stop(), 0);
    app = undefined;
  });
});

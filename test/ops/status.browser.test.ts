/**
 * The library's status router in headless Chromium (playwright-core, Debian's chromium) on the
 * Datastore emulator: a failed, a stale-leased and a stalled step are shown marked, with their
 * ages; retry, resend and cancel work through the page's buttons (the steps then run to the end); a request without
 * authentication gets nothing. Saves a screenshot to /tmp/locker-status.png.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { DatastoreStore } from '../../src/store/datastore/store';
import { StepState, type Authenticator, type Properties } from '../../src/types';
import { PermanentError } from '../../src/errors/errors';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { MemoryLogger } from '../support/task-app';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = '/tmp/locker-status.png';
const TOKEN = 'Bearer operator-secret';
const MIN = 60_000;

describe('status router in headless Chromium on the Datastore emulator', () => {
  const namespace = uniqueNamespace('status-page');
  const store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
  const logger = new MemoryLogger();
  const runs: string[] = [];
  /** Names of entities whose step fails for good (PermanentError). */
  const failing = new Set<string>();
  let dropper: Locker;
  const waitUntil = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 300 && !(await check()); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(await check(), 'reached within 30 s');
  };
  let server: Server;
  let url = '';
  let browser: Browser | undefined;
  let page: Page;
  let locker: Locker;
  const key = (name: string) => new Key({ namespace, path: ['Order', name] });
  const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no operator token' });

  /** Writes an entity with a lock as if it had been left in that state. */
  const seed = (name: string, state: string, ageMs: number, extra: Properties = {}) => store.transaction(async (tx) => {
    tx.put(key(name), {
      total: name.length, lock_ts: new Date(Date.now() - ageMs), lock_req: '', lock_seq: 1, lock_try: 0,
      lock_state: state, lock_chain: `chain-${name}`, ...extra,
    }, ['lock_req', 'lock_seq', 'lock_try', 'lock_chain', 'lock_task', 'lock_err', 'lock_alerts']);
  });

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium to run the browser test.`);
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const queue = new LocalQueue({ baseUrl: () => url, logger });
    locker = new Locker({ store, queue, logger, leaseDuration: MIN, stallAfter: 5 * MIN, maxRetries: 2, duplicateCache: false });
    app.post('/charge', locker.handle(async (ctx) => {
      if (failing.has(String(ctx.key.name))) throw new PermanentError('card declined for good');
      runs.push(`${String(ctx.key.name)}:${ctx.seq}`);
    }, (props) => props, { kinds: ['Order'] }));
    // A Locker whose queue accepts tasks and loses them: its steps are committed but never delivered.
    dropper = new Locker({ store, queue: { enqueue: async () => {} }, authenticate: false, logger, leaseDuration: MIN, stallAfter: 5 * MIN });
    app.use('/ops/locker', locker.statusRouter({ authenticate: auth, kinds: ['Order'], namespaces: [namespace], columns: [{ title: 'Total', value: (s) => String(s.properties.total) }] }));
    await seed('failed-one', StepState.failed, 20 * MIN, { lock_try: 2, lock_err: 'Error: card <declined>\n    at charge (/srv/app/charge.ts:10:5)' });
    await seed('stale-one', StepState.scheduled, 2 * MIN, { lock_req: 'attempt-crashed-7f3a' });
    await seed('stalled-one', StepState.scheduled, 10 * MIN);
    await seed('stalled-two', StepState.scheduled, 11 * MIN);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, extraHTTPHeaders: { authorization: TOKEN } });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await locker?.shutdown();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const row = (name: string) => page.locator(`tr[data-key="${locker.encodeKey(key(name))}"]`).first();

  it('gives a request without authentication nothing', async () => {
    const res = await fetch(`${url}/ops/locker/`);
    assert.equal(res.status, 401);
    const text = await res.text();
    assert.equal(text, 'authentication required\n');
    const json = await fetch(`${url}/ops/locker/steps.json`);
    assert.equal(json.status, 401);
    assert.doesNotMatch(await json.text(), /stale-one|failed-one/);
  });

  it('shows a failed, a stale-leased and a stalled step marked, with their ages, on a phone-sized screen', async () => {
    await page.goto(`${url}/ops/locker/`);
    assert.equal(await page.title(), 'datastore-locker');
    const failed = row('failed-one');
    assert.equal(await failed.getAttribute('data-state'), 'failed');
    assert.match(await failed.locator('.error-message').innerText(), /^Error: card <declined>$/);
    assert.match(await failed.locator('[data-age="progress"]').innerText(), /^20 min( \d+ s)?$/);
    const stale = row('stale-one');
    assert.equal(await stale.getAttribute('data-stale'), 'true');
    assert.equal(await stale.locator('.mark.stale').innerText(), 'STALE LEASE'.toLowerCase());
    assert.match(await stale.locator('[data-age="lease"]').innerText(), /^2 min( \d+ s)?$/);
    const stalled = row('stalled-one');
    assert.equal(await stalled.getAttribute('data-stalled'), 'true');
    assert.equal(await stalled.locator('.mark.stalled').innerText(), 'stalled');
    assert.match(await stalled.locator('[data-age="progress"]').innerText(), /^10 min( \d+ s)?$/);
    assert.equal(await stalled.locator('td[data-label="Total"]').innerText(), String('stalled-one'.length));
    // Rows become cards on a narrow screen: each cell on its own line, labelled.
    assert.equal(await stalled.evaluate((tr) => (globalThis as unknown as { getComputedStyle(e: unknown): { display: string } }).getComputedStyle(tr).display), 'block');
    assert.equal(await page.locator('meta[http-equiv="refresh"]').getAttribute('content'), '30');
    const widths = await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]') as [number, number];
    assert.ok(widths[0] <= widths[1] + 1, `no horizontal scrolling: ${widths[0]} > ${widths[1]}`);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('shows one step in detail: error with its stack, lease holder and age', async () => {
    await page.goto(`${url}/ops/locker/`);
    await row('stale-one').locator('a').first().click();
    await page.waitForURL(/\/ops\/locker\/step\?key=/);
    const detail = page.locator('table.detail');
    assert.equal(await detail.getAttribute('data-state'), 'stale');
    assert.match(await detail.innerText(), /attempt-crashed-7f3a 2 min( \d+ s)? ago stale/);
    await page.goto(`${url}/ops/locker/step?key=${locker.encodeKey(key('failed-one'))}`);
    assert.match(await page.locator('pre.stack').innerText(), /at charge \(\/srv\/app\/charge\.ts:10:5\)/);
  });

  it('shows a live step\'s ledger record and when it started on its detail page', async () => {
    const k = key('ledger-shown');
    await dropper.schedule(k, { total: 3 }, '/charge', { order: 3 }); // committed with its ledger record; its task is lost
    const task = (await locker.inspect().step(k))?.task;
    assert.ok(task);
    await page.goto(`${url}/ops/locker/step?key=${locker.encodeKey(k)}`);
    const detail = page.locator('table.detail');
    assert.match(await detail.locator('[data-age="started"]').innerText(), /^\d+ (ms|s)$/);
    assert.equal(await detail.locator('[data-ledger="sends"]').innerText(), '1');
    assert.match(await detail.innerText(), new RegExp(`Ledger record\\s+${task} · /charge · 11 bytes of payload`));
    assert.match(await detail.innerText(), /Sweep\s+looks again in 5 min|Sweep\s+looks again in 4 min 5\d s/);
    await dropper.cancel(k);
  });

  it('retries a failed step through the page: it runs again with a fresh budget and completes', async () => {
    const k = key('to-retry');
    failing.add(String(k.name));
    await locker.schedule(k, { total: 1 }, '/charge');
    await waitUntil(async () => (await locker.inspect().step(k))?.state === 'failed');
    failing.delete(String(k.name));
    await page.goto(`${url}/ops/locker/`);
    const failedRow = row('to-retry');
    assert.equal(await failedRow.getAttribute('data-state'), 'failed');
    await Promise.all([page.waitForURL(/done=retry/), failedRow.getByRole('button', { name: 'Retry' }).click()]);
    assert.match(await page.locator('.done').innerText(), /Retried/);
    await waitUntil(async () => (await locker.inspect().step(k))?.state === 'complete');
    assert.deepEqual(runs.filter((r) => r === 'to-retry:1'), ['to-retry:1']);
    assert.ok(logger.has('failed step retried by an operator'));
  });

  it('re-sends a stalled step and a stale-leased one through the page: each then runs and completes', async () => {
    for (const [name, holder, ageMs] of [['lost-task', '', 10 * MIN], ['dead-holder', 'attempt-died', 2 * MIN]] as const) {
      const k = key(name);
      await dropper.schedule(k, { total: 2 }, '/charge'); // committed with its ledger record; its task is lost
      await store.transaction(async (tx) => {
        const props = (await tx.get(k))!;
        tx.put(k, { ...props, lock_req: holder, lock_ts: new Date(Date.now() - ageMs) }, ['lock_req', 'lock_seq', 'lock_try', 'lock_chain', 'lock_task', 'lock_err', 'lock_alerts']);
        // Its task went out as long ago and never arrived: a step re-sent recently would be queued, not stalled.
        const record = (await tx.getLedger(k, String(props.lock_task)))!;
        tx.putLedger({ ...record, sentAt: new Date(Date.now() - ageMs) });
      });
      await page.goto(`${url}/ops/locker/`);
      const r = row(name);
      assert.equal(await r.getAttribute(holder ? 'data-stale' : 'data-stalled'), 'true');
      await Promise.all([page.waitForURL(/done=resend/), r.getByRole('button', { name: 'Resend' }).click()]);
      await waitUntil(async () => (await locker.inspect().step(k))?.state === 'complete');
      assert.deepEqual(runs.filter((x) => x === `${name}:1`), [`${name}:1`]);
    }
  });

  it('cancels a chain through the page', async () => {
    await page.goto(`${url}/ops/locker/step?key=${locker.encodeKey(key('stalled-two'))}`);
    await Promise.all([page.waitForURL(/done=cancel/), page.getByRole('button', { name: 'Cancel' }).click()]);
    assert.match(await page.locator('.done').innerText(), /Cancelled/);
    assert.equal(await page.locator('table.detail').getAttribute('data-state'), 'cancelled');
    assert.equal((await locker.inspect().step(key('stalled-two')))?.state, 'cancelled');
    assert.ok(logger.has('chain cancelled by an operator'));
  });
});

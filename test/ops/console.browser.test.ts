/**
 * The operator's console, the whole path in headless Chromium on the Datastore emulator: 1,000
 * chains started by one scheduleMany(), the kickoff's progress bar reaching 1,000; 100 of them
 * failing for good and found first on the overview, counted; one found by its key as the page
 * writes it; and every chain's effect done exactly once. Screenshots go to /tmp, or to
 * docs/guides/images (the operators' page shows them) with UPDATE_SCREENSHOTS=1.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { DatastoreStore } from '../../src/store/datastore/store';
import { PermanentError } from '../../src/errors/errors';
import type { Authenticator } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { MemoryLogger } from '../support/task-app';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'Bearer operator-secret';
const CHAINS = 1_000;
const FAILING = 100;
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(__dirname, '..', '..', 'docs', 'guides', 'images') : '/tmp';

describe('the operator\'s console in headless Chromium: 1,000 chains, 100 failed', { timeout: 600_000 }, () => {
  const namespace = uniqueNamespace('console');
  const store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
  const logger = new MemoryLogger();
  /** Effects done, per order: each must be 1 at the end. */
  const effects = new Map<string, number>();
  /** Orders whose card is declined (their step fails for good). */
  const declined = new Set<string>();
  const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no operator token' });
  let server: Server;
  let url = '';
  let queue: LocalQueue;
  let locker: Locker;
  let browser: Browser | undefined;
  let page: Page;
  const name = (i: number) => `o-${i}`;

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium to run the browser test.`);
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    queue = new LocalQueue({ baseUrl: url, logger, concurrency: 32 });
    locker = new Locker({ store, queue, logger, maxRetries: 2 });
    app.post('/charge', locker.handle(async (ctx) => {
      const n = String(ctx.key.name);
      if (declined.has(n)) throw new PermanentError('card declined for good');
      effects.set(n, (effects.get(n) ?? 0) + 1);
    }, (props) => props, { kinds: ['Order'] }));
    app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order'], namespaces: [namespace], refreshSeconds: 0 })); // the test reloads the page itself
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, extraHTTPHeaders: { authorization: TOKEN } });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await queue?.shutdown();
    await locker?.shutdown();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Reloads `path` until `check` passes on the page (the page reloads itself too), at most `ms`. */
  const until = async (path: string, what: string, check: () => Promise<boolean>, ms = 300_000): Promise<void> => {
    const end = Date.now() + ms;
    for (;;) {
      await page.goto(`${url}/ops${path}`);
      if (await check()) return;
      if (Date.now() > end) assert.fail(`${what}: not within ${ms / 1000} s`);
      await new Promise((r) => setTimeout(r, 1_000));
    }
  };

  it('starts 1,000 chains and sees the kickoff\'s progress bar reach 1,000', async () => {
    for (let i = 0; i < CHAINS; i += CHAINS / FAILING) declined.add(name(i));
    const items = Array.from({ length: CHAINS }, (_, i) => ({ key: new Key({ namespace, path: ['Order', name(i)] }), entity: { total: i }, path: '/charge' }));
    // A store fault fails items, not the call; the same kickoffId called again starts the rest and
    // none twice (a loaded emulator may time out a batch).
    let result = await locker.scheduleMany(items, { kickoffId: 'november' });
    for (let again = 0; again < 5 && result.failed > 0; again++) result = await locker.scheduleMany(items, { kickoffId: 'november' });
    assert.equal(result.started, CHAINS, JSON.stringify({ busy: result.busy, failed: result.failed, first: result.results.find((r) => r.status !== 'started') }));
    await until('/kickoff?id=november', 'the kickoff\'s 1,000 chains settled', async () =>
      (await page.locator('svg.progress').getAttribute('aria-label')) === `${CHAINS - FAILING} complete, ${FAILING} failed, 0 cancelled, 0 live, of 1,000`);
    assert.equal(await page.locator('[data-count="started"]').innerText(), '1,000');
    await page.screenshot({ path: join(SHOTS, 'status-kickoff.png') });
  });

  it('finds the 100 failed chains first on the overview, counted', async () => {
    await page.goto(`${url}/ops/`);
    const first = page.locator('main section').first();
    assert.equal(await first.getAttribute('data-state'), 'failed', 'the overview opens on the failed steps');
    assert.equal(await page.locator('a[data-count="failed"]').innerText(), String(FAILING));
    assert.equal(await page.locator('a[data-count="complete"]').innerText(), (CHAINS - FAILING).toLocaleString('en-US'));
    assert.ok(await first.locator('tr[data-state="failed"]').count() > 0);
    await page.screenshot({ path: join(SHOTS, 'status-overview.png'), fullPage: false });
  });

  it('finds one chain by its key as the page writes it', async () => {
    await page.goto(`${url}/ops/`);
    await page.locator('form.search input[name="q"]').fill(`Order:"${name(500)}"`);
    await Promise.all([page.waitForURL(/\/ops\/step\?key=/), page.locator('form.search button').click()]);
    assert.equal(await page.locator('h2.key').innerText(), `Order:"${name(500)}"`);
    assert.equal(await page.locator('table.detail').getAttribute('data-state'), 'failed');
  });

  it('did each chain\'s effect exactly once, and none for the failed ones', () => {
    assert.equal(effects.size, CHAINS - FAILING);
    assert.deepEqual([...effects.values()].filter((n) => n !== 1), [], 'every effect once');
    for (const n of declined) assert.equal(effects.get(n), undefined);
  });
});

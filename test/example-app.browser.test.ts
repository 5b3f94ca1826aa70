/**
 * The example's status page in a real browser (headless Chromium through playwright-core): it
 * shows both autostarted chains with their state, refreshes itself, and its button starts a new
 * counter chain that then appears and runs to completion. Saves a screenshot to /tmp/status.png.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { COUNTER_STEPS } from '../example-app/chains';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from './support/example-process';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = '/tmp/status.png';
/** How long the page may take to show what the test waits for, ms. */
const PAGE_LIMIT_MS = 60_000;

describe('example app status page in headless Chromium', () => {
  let app: ExampleProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install it with \`apt-get install chromium\` (Debian's package) to run the browser test.`);
    }
    app = await startExample();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  });
  after(async () => {
    await browser?.close();
    await app?.stop();
  });

  it('shows both autostarted chains with their state', async () => {
    await page.goto(`${app!.url}/`);
    assert.equal(await page.title(), 'datastore-locker example');
    const counterRow = page.locator('tr.chain[data-kind="Counter"]');
    const orderRow = page.locator('tr.chain[data-kind="Order"]');
    await page.locator('tr.chain[data-kind="Counter"][data-state="complete"]').waitFor({ timeout: PAGE_LIMIT_MS });
    await page.locator('tr.chain[data-kind="Order"][data-state="complete"]').waitFor({ timeout: PAGE_LIMIT_MS });
    assert.equal(await counterRow.count(), 1);
    assert.equal(await orderRow.count(), 1);

    const { chains } = await fetchStatus(app!.url);
    for (const chain of chains) {
      const row = page.locator(`tr.chain[data-key=${JSON.stringify(chain.key)}]`);
      assert.equal(await row.locator('td.key').innerText(), chain.key, 'the key reads as it is, quotes included');
      assert.equal(await row.locator('.state').innerText(), 'complete');
    }
    const counterSteps = counterRow.locator('.step');
    assert.equal(await counterSteps.count(), COUNTER_STEPS);
    assert.deepEqual(await counterSteps.evaluateAll((spans) => spans.map((s) => s.getAttribute('data-runs'))), Array(COUNTER_STEPS).fill('1'));
    assert.match(await counterRow.locator('.step[data-seq="6"]').innerText(), /1 duplicate dropped/);
    assert.match(await orderRow.locator('.step[data-seq="1"]').innerText(), /charged ×1 \(2 attempts\)/);
    // Let the page refresh once more so the screenshot shows the final counts.
    await page.waitForTimeout(1_600);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('refreshes itself: a chain started elsewhere appears, and completes, without a reload', async () => {
    await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
    const started = await fetch(`${app!.url}/start/order`, { method: 'POST', headers: { accept: 'application/json' } });
    assert.equal(started.status, 201);
    const { name } = (await started.json()) as { name: string };
    const key = `Order:${JSON.stringify(name)}`;
    await page.locator(`tr.chain[data-key=${JSON.stringify(key)}][data-state="complete"]`).waitFor({ timeout: PAGE_LIMIT_MS });
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, 'the page was not reloaded');
  });

  it('starts a new counter chain from its button, which then appears and completes', async () => {
    const before = await page.locator('tr.chain[data-kind="Counter"]').count();
    await Promise.all([
      page.waitForURL(`${app!.url}/`, { waitUntil: 'load' }),
      page.getByRole('button', { name: 'Start a counter chain' }).click(),
    ]);
    const counters = page.locator('tr.chain[data-kind="Counter"]');
    await waitFor('a second counter row', async () => ((await counters.count()) === before + 1 ? true : undefined), PAGE_LIMIT_MS);
    const newest = counters.first();
    const key = await newest.getAttribute('data-key');
    assert.equal(key, (await fetchStatus(app!.url)).chains[0]?.key, 'the new chain is listed first');
    await page.locator(`tr.chain[data-key=${JSON.stringify(key)}][data-state="complete"]`).waitFor({ timeout: PAGE_LIMIT_MS });
    assert.equal(await page.locator(`tr.chain[data-key=${JSON.stringify(key)}] .step`).count(), COUNTER_STEPS);
  });
});

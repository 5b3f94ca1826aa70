/**
 * The example's status page in a real browser (headless Chromium through playwright-core): the
 * library's status router with the app's side effects as a column. It shows both autostarted
 * chains with their state and counts, reloads itself, and its button starts a new counter chain
 * that then appears and runs to completion. Saves a screenshot to /tmp/status.png.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from '../support/example-process';

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

  /** The row of a chain, by its encoded key, in the section of its state. */
  const row = (encodedKey: string, state = 'complete') => page.locator(`tr[data-key="${encodedKey}"][data-state="${state}"]`);

  it('shows both autostarted chains complete, with their side effects', async () => {
    const { counter, order } = await waitFor('both demo chains to complete', async () => {
      const { chains } = await fetchStatus(app!.url);
      const c = chains.find((x) => x.kind === 'Counter' && x.state === 'complete' && x.steps.some((s) => s.dropped > 0));
      const o = chains.find((x) => x.kind === 'Order' && x.state === 'complete');
      return c && o ? { counter: c, order: o } : undefined;
    }, PAGE_LIMIT_MS);
    await page.goto(`${app!.url}/`);
    assert.equal(await page.title(), 'datastore-locker example');
    const counterRow = row(counter.encodedKey);
    const orderRow = row(order.encodedKey);
    await counterRow.waitFor({ timeout: PAGE_LIMIT_MS });
    assert.equal(await counterRow.locator('a').first().innerText(), counter.key, 'the key reads as it is, quotes included');
    assert.equal(await counterRow.locator('.state').innerText(), 'Complete');
    assert.match(await counterRow.locator('td[data-label="Side effects"]').innerText(), /6 counted ×1 \(1 duplicate dropped\)/);
    assert.match(await counterRow.locator('td[data-label="Side effects"]').innerText(), /10 counted ×1$/);
    assert.match(await orderRow.locator('td[data-label="Side effects"]').innerText(), /^1 charged ×1 \(2 attempts\) · 2 emailed ×1 · 3 archived ×1$/);
    assert.match(await counterRow.locator('[data-age="progress"]').innerText(), /^(\d+ ms|\d+ s|\d+ min( \d+ s)?)$/, 'last progress as an age');
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it('reloads itself: a chain started elsewhere appears, and completes, without the test reloading it', async () => {
    assert.equal(await page.locator('meta[http-equiv="refresh"]').getAttribute('content'), '2');
    const started = await fetch(`${app!.url}/start/order`, { method: 'POST', headers: { accept: 'application/json' } });
    assert.equal(started.status, 201);
    const { name } = (await started.json()) as { name: string };
    const key = `Order:${JSON.stringify(name)}`;
    await waitFor(`${key} on the page, complete`, async () => {
      const links = await page.locator('tr[data-state="complete"] td[data-label="Entity"] a').allInnerTexts().catch((): string[] => []);
      return links.includes(key) ? true : undefined;
    }, PAGE_LIMIT_MS);
  });

  it('starts a new counter chain from its button, which then appears and completes', async () => {
    await page.goto(`${app!.url}/`);
    const before = new Set((await fetchStatus(app!.url)).chains.filter((c) => c.kind === 'Counter').map((c) => c.key));
    await Promise.all([
      page.waitForURL(`${app!.url}/`, { waitUntil: 'load' }),
      page.getByRole('button', { name: 'Start a counter chain' }).click(),
    ]);
    const newest = await waitFor('a new counter chain', async () =>
      (await fetchStatus(app!.url)).chains.find((c) => c.kind === 'Counter' && !before.has(c.key)), PAGE_LIMIT_MS);
    await row(newest.encodedKey).waitFor({ timeout: PAGE_LIMIT_MS });
    assert.match(await row(newest.encodedKey).locator('td[data-label="Side effects"]').innerText(), /^1 counted ×1 · .* · 10 counted ×1$/);
  });
});

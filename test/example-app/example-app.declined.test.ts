/**
 * The example app's "declined" button: `POST /start/declined-orders` starts orders whose first
 * charge fails for good (one `scheduleMany()` call; 100 by default, `?count=` fewer). They wait
 * under Failed with a Retry button, the first thing the status page shows; retried through the
 * page's form, an order's charge goes through once and the chain runs to complete.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from '../support/example-process';

const COUNT = 5;

describe('example app: orders declined for good', () => {
  let app: ExampleProcess;
  before(async () => { app = await startExample({ EXAMPLE_AUTOSTART: '0' }); });
  after(async () => { await app.stop(); });

  it('shows the button, and refuses a count out of range', async () => {
    const html = await (await fetch(`${app.url}/`)).text();
    assert.match(html, /<form method="post" action="\/start\/declined-orders"><button type="submit">Start 100 orders whose card is declined for good<\/button><\/form>/);
    for (const count of ['0', '101', 'x']) {
      const res = await fetch(`${app.url}/start/declined-orders?count=${count}`, { method: 'POST', headers: { accept: 'application/json' } });
      assert.equal(res.status, 400, `count=${count}`);
    }
  });

  it(`fails ${COUNT} orders for good, lists them first with Retry, and a retry through the page charges one once`, { timeout: 120_000 }, async () => {
    const res = await fetch(`${app.url}/start/declined-orders?count=${COUNT}`, { method: 'POST', headers: { accept: 'application/json' } });
    assert.equal(res.status, 201);
    const started = (await res.json()) as { kickoffId: string; started: number };
    assert.equal(started.started, COUNT);
    const failed = await waitFor(`${COUNT} orders to fail for good`, async () => {
      const found = (await fetchStatus(app.url)).chains.filter((c) => c.key.includes(started.kickoffId));
      return found.length === COUNT && found.every((c) => c.state === 'failed') ? found : undefined;
    });
    for (const order of failed) assert.deepEqual(order.steps.map((s) => [s.attempts, s.runs]), [[1, 0]], `${order.key}: one attempt, no charge`);

    const page = await fetch(`${app.url}/`);
    const html = await page.text();
    const firstSection = /<section class="state-([a-z]+)"/.exec(html)?.[1];
    assert.equal(firstSection, 'failed', 'the page opens on the failed steps');
    const target = failed[0]!;
    const form = new RegExp(`<form method="post" action="/step/retry" class="action">\\s*<input type="hidden" name="key" value="${target.encodedKey}"><input type="hidden" name="seq" value="1"><input type="hidden" name="csrf" value="([^"]+)">`).exec(html);
    assert.ok(form, 'the failed order has a Retry form');
    const cookie = page.headers.get('set-cookie')?.split(';')[0] ?? '';
    const retried = await fetch(`${app.url}/step/retry`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: app.url, 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams({ key: target.encodedKey, seq: '1', csrf: form[1]! }).toString(),
    });
    assert.equal(retried.status, 303);
    const done = await waitFor(`${target.key} to complete`, async () => {
      const chain = (await fetchStatus(app.url)).chains.find((c) => c.key === target.key);
      return chain?.state === 'complete' ? chain : undefined;
    });
    assert.deepEqual(done.steps.map((s) => s.runs), [1, 1, 1], 'charged, emailed and archived once each');
    assert.equal(done.steps[0]!.attempts, 2, 'the charge: the declined attempt and the retried one');
    const others = (await fetchStatus(app.url)).chains.filter((c) => c.key.includes(started.kickoffId) && c.key !== target.key);
    assert.ok(others.every((c) => c.state === 'failed'), 'the others still wait for a retry');
  });
});

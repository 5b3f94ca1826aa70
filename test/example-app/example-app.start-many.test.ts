/**
 * The example app's "start many" button: `POST /start/counters` starts counter chains with one
 * `locker.scheduleMany()` call (1,000 by default; `?count=` fewer), and the status page shows them
 * run down to complete, each step's side effect once.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { COUNTER_STEPS } from '../../example-app/chains';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from '../support/example-process';

const COUNT = 30;

describe('example app: starting many counter chains at once', () => {
  let app: ExampleProcess;
  before(async () => { app = await startExample({ EXAMPLE_AUTOSTART: '0' }); });
  after(async () => { await app.stop(); });

  it('shows the button on the status page', async () => {
    const html = await (await fetch(`${app.url}/`)).text();
    assert.match(html, /<form method="post" action="\/start\/counters"><button type="submit">Start 1,000 counter chains at once<\/button><\/form>/);
  });

  it('refuses a count out of range, starting nothing', async () => {
    for (const count of ['0', '1001', 'many']) {
      const res = await fetch(`${app.url}/start/counters?count=${count}`, { method: 'POST', headers: { accept: 'application/json' } });
      assert.equal(res.status, 400, `count=${count}`);
    }
    assert.deepEqual((await fetchStatus(app.url)).chains, []);
  });

  it(`starts ${COUNT} counter chains in one call and runs every one of them to complete, each step once`, { timeout: 240_000 }, async () => {
    const res = await fetch(`${app.url}/start/counters?count=${COUNT}`, { method: 'POST', headers: { accept: 'application/json' } });
    assert.equal(res.status, 201);
    const started = (await res.json()) as { kickoffId: string; started: number; busy: number; failed: number };
    assert.deepEqual([started.started, started.busy, started.failed], [COUNT, 0, 0]);
    assert.match(started.kickoffId, /^counters-[0-9a-f]{8}$/);
    assert.match(app.stdout(), new RegExp(`^${COUNT} counter chains kicked off at once \\(${started.kickoffId}\\): ${COUNT} started, 0 busy, 0 failed$`, 'm'));

    const chains = await waitFor(`${COUNT} counter chains to complete`, async () => {
      const found = (await fetchStatus(app.url)).chains.filter((c) => c.kind === 'Counter' && c.key.includes(started.kickoffId));
      return found.length === COUNT && found.every((c) => c.state === 'complete') ? found : undefined;
    }, 200_000);
    for (const chain of chains) {
      assert.equal(chain.seq, COUNTER_STEPS + 1, `${chain.key} ran every step`);
      assert.deepEqual(chain.steps.map((s) => s.runs), Array(COUNTER_STEPS).fill(1), `${chain.key}: each step's side effect ran once`);
    }
  });
});

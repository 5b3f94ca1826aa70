/**
 * The example app's "start many" button: `POST /start/counters` starts counter chains with one
 * `locker.scheduleMany()` call (1,000 by default; `?count=` fewer), and the status page shows them
 * run down to complete, each step's side effect once.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { COUNTER_STEPS } from '../../example-app/chains';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from '../support/example-process';
import { PER_STATE, type Status } from '../../example-app/status';

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

  it('sends the button\'s form to the kickoff\'s page, whose progress bar counts its chains', { timeout: 120_000 }, async () => {
    const res = await fetch(`${app.url}/start/counters?count=5`, { method: 'POST', redirect: 'manual', headers: { accept: 'text/html' } });
    assert.equal(res.status, 303);
    const location = res.headers.get('location') ?? '';
    assert.match(location, /^\/kickoff\?id=counters-[0-9a-f]{8}$/);
    const done = await waitFor('the kickoff\'s 5 chains to complete', async () => {
      const page = await (await fetch(`${app.url}${location}`)).text();
      return /aria-label="5 complete, 0 failed, 0 cancelled, 0 live, of 5"/.test(page) ? page : undefined;
    }, 100_000);
    assert.match(done, /<span data-count="started">5<\/span> chains started/);
  });

  it('cuts no list silently: past 100 chains of a kind and state, /status.json names the next page, and the pages hold every chain once', { timeout: 300_000 }, async () => {
    const more = PER_STATE + 20;
    const res = await fetch(`${app.url}/start/counters?count=${more}`, { method: 'POST', headers: { accept: 'application/json' } });
    assert.equal(res.status, 201);
    const all = COUNT + 5 + more;
    const first = await waitFor('every counter chain to complete', async () => {
      const status = await fetchStatus(app.url);
      const cut = status.cut.find((c) => c.kind === 'Counter' && c.state === 'complete');
      const live = status.chains.filter((c) => c.kind === 'Counter' && c.state !== 'complete');
      return cut && live.length === 0 ? { status, cut } : undefined;
    }, 280_000);
    assert.equal(first.status.chains.filter((c) => c.kind === 'Counter').length, PER_STATE, 'one answer lists 100 of a state');
    const keys = new Set(first.status.chains.filter((c) => c.kind === 'Counter').map((c) => c.key));
    let next: string | undefined = first.cut.next;
    for (let pages = 0; next !== undefined && pages < 10; pages++) {
      const page = await fetch(`${app.url}${next}`);
      assert.equal(page.status, 200, next);
      const body = (await page.json()) as Status;
      for (const c of body.chains) {
        assert.equal(c.state, 'complete');
        assert.ok(!keys.has(c.key), `${c.key} listed once`);
        keys.add(c.key);
      }
      next = body.cut[0]?.next;
    }
    assert.equal(keys.size, all, 'the pages hold every chain');
    const bad = await fetch(`${app.url}/status.json?kind=Counter&state=complete&cursor=not-a-cursor`);
    assert.equal(bad.status, 400);
    assert.equal((await fetch(`${app.url}/status.json?kind=Nope&state=complete`)).status, 400);
  });
});

// Schedules on the status router without a browser, on the in-memory store and a fake clock:
// schedules declared and ticked show with their next and last runs (page, overview and JSON, paged
// with a cursor); pause, resume and run now are CSRF-checked POSTs; the run-now confirm page
// submitted twice starts one run; a hostile schedule name is escaped; every answer has the CSP.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { StepState, type Properties } from '../../src/types';
import { RecordingQueue } from '../support/recording-queue';
import { MemoryLogger } from '../support/task-app';
import { OPERATOR, operatorAuth } from '../support/bulk-rig';

const BASE = '/ops/locker';
const HOSTILE = `<script>alert("x")</script>'&`;

async function fixture() {
  const store = new MemoryStore({ projectId: 'shop' });
  const logger = new MemoryLogger();
  const queue = new RecordingQueue();
  const clock = { now: Date.UTC(2026, 0, 5, 10, 0, 30) };
  const options = { store, queue, authenticate: false as const, logger, clock: () => clock.now };
  const locker = new Locker(options);
  locker.recurring('every-5', { cron: '*/5 * * * *', path: '/run' });
  locker.recurring('nightly', { cron: '0 3 * * *', timeZone: 'Europe/Paris', path: '/nightly' });
  await store.transaction(async (tx) => {
    tx.put(new Key({ path: ['Order', 'failed'] }), {
      lock_ts: new Date(clock.now - 20 * 60_000), lock_req: '', lock_seq: 1, lock_try: 3, lock_state: StepState.failed, lock_chain: 'c1', lock_task: 't1', lock_err: 'Error: declined',
    } satisfies Properties, UNINDEXED_LOCK_FIELDS);
  });
  assert.equal((await locker.tick()).declared, 2, 'the first tick wrote both schedules');
  clock.now = Date.UTC(2026, 0, 5, 10, 5, 10);
  assert.equal((await locker.tick()).started, 1, 'every-5 ran at 10:05');
  const app = express();
  app.use(BASE, locker.statusRouter({ authenticate: operatorAuth, kinds: ['Order'], refreshSeconds: 0 }));
  return { app, locker, store, queue, logger, clock, options };
}

/** A page read by an agent that keeps its CSRF cookie, and the token its forms repeat. */
async function page(app: express.Express, path: string) {
  const agent = request.agent(app);
  const res = await agent.get(`${BASE}${path}`).set('authorization', OPERATOR.token);
  const token = /name="csrf" value="([\w-]+)"/.exec(res.text)?.[1];
  return { agent, res, token };
}

function post(agent: ReturnType<typeof request.agent>, path: string, form: Record<string, string | undefined>) {
  return agent.post(`${BASE}${path}`).set('authorization', OPERATOR.token).type('form').send(form);
}

/** The schedule `name` as `/schedules.json` shows it. */
async function jsonOf(app: express.Express, name: string): Promise<Record<string, any>> {
  const res = await request(app).get(`${BASE}/schedules.json?limit=200`).set('authorization', OPERATOR.token);
  assert.equal(res.status, 200);
  const found = (res.body.schedules as Array<Record<string, any>>).find((s) => s.name === name);
  assert.ok(found, `${name} is listed`);
  return found;
}

describe('statusRouter schedules', () => {
  it('lists each schedule with its cron, zone, next run and last run (linked to its step page), under the CSP', async () => {
    const { app, locker } = await fixture();
    const { res, agent } = await page(app, '/schedules');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-security-policy'] as string, /default-src 'none'/);
    assert.doesNotMatch(res.text, /<script|style="/);
    const row = /<tr data-schedule="every-5"[^]*?<\/tr>/.exec(res.text)?.[0] ?? '';
    assert.match(row, /<code>\*\/5 \* \* \* \*<\/code> <span class="help">UTC<\/span>/);
    assert.match(row, /data-state="active"/);
    assert.match(row, /<time datetime="2026-01-05T10:10:00.000Z"[^>]*>in <span class="age" data-age="next">4 min 50 s<\/span>/);
    assert.match(row, /data-outcome="started"[^]*<span class="age" data-age="last">10 s<\/span> ago/);
    assert.match(row, /<span data-count="started">1<\/span> started · <span data-count="skipped">0<\/span> skipped/);
    const encoded = locker.encodeKey(new Key({ path: ['LockerRecurringRun', 'every-5'] }));
    assert.ok(row.includes(`href="${BASE}/step?key=${encodeURIComponent(encoded)}"`), row);
    assert.match(row, /LockerRecurringRun:&quot;every-5&quot;<\/a>/);
    assert.match(row, /chain <code>[\w-]+<\/code>/, 'the last run\'s chain id');
    assert.match(row, /<button type="submit" class="pause"/);
    assert.match(row, /href="\/ops\/locker\/schedules\/run-now\?name=every-5">Run now…/);
    const nightly = /<tr data-schedule="nightly"[^]*?<\/tr>/.exec(res.text)?.[0] ?? '';
    assert.match(nightly, /Europe\/Paris/);
    assert.match(nightly, /datetime="2026-01-06T02:00:00.000Z"/, '03:00 in Paris is 02:00 UTC in January');
    assert.match(nightly, /never ran/);
    const step = await agent.get(`${BASE}/step?key=${encodeURIComponent(encoded)}`).set('authorization', OPERATOR.token);
    assert.equal(step.status, 200, 'the last run\'s link opens its step page');
    assert.match(step.text, /LockerRecurringRun:&quot;every-5&quot;/);
  });

  it('shows the schedules on the overview after the failed steps, and in its JSON', async () => {
    const { app } = await fixture();
    const { res } = await page(app, '/');
    const failed = res.text.indexOf('data-state="failed"');
    const schedules = res.text.indexOf('data-section="schedules"');
    const counts = res.text.indexOf('class="counts"');
    assert.ok(failed > 0 && schedules > failed && counts > schedules, `failed ${failed} < schedules ${schedules} < counts ${counts}`);
    assert.match(res.text, /<tr data-schedule="every-5"/);
    const json = await request(app).get(`${BASE}/steps.json`).set('authorization', OPERATOR.token);
    assert.deepEqual((json.body.schedules.schedules as Array<{ name: string }>).map((s) => s.name).sort(), ['every-5', 'nightly']);
    const filtered = await request(app).get(`${BASE}/steps.json?state=failed`).set('authorization', OPERATOR.token);
    assert.equal(filtered.body.schedules, undefined, 'a filtered list is not the overview');
  });

  it('answers /schedules.json a page at a time, with a cursor until the last: nothing cut silently', async () => {
    const { app } = await fixture();
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await request(app).get(`${BASE}/schedules.json?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`).set('authorization', OPERATOR.token);
      assert.equal(res.status, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      names.push(...(res.body.schedules as Array<{ name: string }>).map((s) => s.name));
      cursor = res.body.cursor as string | undefined;
      pages += 1;
    } while (cursor && pages < 5);
    assert.deepEqual(names.sort(), ['every-5', 'nightly']);
    const every5 = await jsonOf(app, 'every-5');
    assert.equal(every5.next, '2026-01-05T10:10:00.000Z');
    assert.equal(every5.nextInMs, 290_000);
    assert.equal(every5.last.outcome, 'started');
    assert.equal(every5.last.keyPath, 'LockerRecurringRun:"every-5"');
    assert.equal(typeof every5.last.encodedKey, 'string');
    assert.equal(every5.declaredHere, true);
    assert.deepEqual(every5.actions, ['pause', 'run-now'], 'the buttons the page offers');
    assert.equal((await request(app).get(`${BASE}/schedules.json?limit=0`).set('authorization', OPERATOR.token)).status, 400);
    const html = await request(app).get(`${BASE}/schedules?limit=1`).set('authorization', OPERATOR.token);
    assert.match(html.text, /More schedules →/, 'the page links its next page');
  });

  it('pauses and resumes through CSRF-checked POSTs; a POST without the token is refused and changes nothing', async () => {
    const { app, clock, logger } = await fixture();
    const { agent, token } = await page(app, '/schedules');
    assert.ok(token);
    for (const form of [{ name: 'every-5' }, { name: 'every-5', csrf: 'forged-token-forged-token-forged-token' }]) {
      const refused = await post(agent, '/schedules/pause', form);
      assert.equal(refused.status, 403);
      assert.match(refused.text, /Refused/);
    }
    const crossSite = await post(agent, '/schedules/pause', { name: 'every-5', csrf: token }).set('sec-fetch-site', 'cross-site');
    assert.equal(crossSite.status, 403);
    assert.equal((await request(app).post(`${BASE}/schedules/pause`).type('form').send({ name: 'every-5', csrf: token })).status, 401, 'no authentication');
    assert.equal((await jsonOf(app, 'every-5')).state, 'active', 'nothing changed');
    assert.ok(logger.lines.some((l) => l.message.includes('schedule action refused')));

    const paused = await post(agent, '/schedules/pause', { name: 'every-5', csrf: token });
    assert.equal(paused.status, 303);
    assert.equal(paused.headers.location, `${BASE}/schedules?done=paused&name=every-5`);
    const shown = await agent.get(paused.headers.location!).set('authorization', OPERATOR.token);
    assert.match(shown.text, /<p class="done" role="status"><strong>every-5<\/strong>: Paused/);
    assert.match(shown.text, /<tr data-schedule="every-5" data-state="paused"[^]*?<button type="submit" class="resume"/);
    const view = await jsonOf(app, 'every-5');
    assert.equal(view.state, 'paused');
    assert.equal(view.next, undefined, 'no next run while paused');
    assert.deepEqual(view.actions, ['resume', 'run-now']);
    assert.equal((await post(agent, '/schedules/pause', { name: 'every-5', csrf: token })).headers.location, `${BASE}/schedules?done=already-paused&name=every-5`);

    clock.now = Date.UTC(2026, 0, 5, 10, 31, 0);
    const resumed = await post(agent, '/schedules/resume', { name: 'every-5', csrf: token });
    assert.equal(resumed.headers.location, `${BASE}/schedules?done=resumed&name=every-5`);
    const after = await jsonOf(app, 'every-5');
    assert.equal(after.state, 'active');
    assert.equal(after.next, '2026-01-05T10:35:00.000Z', 'from its next tick after now');
    assert.equal((await post(agent, '/schedules/pause', { name: 'no-such', csrf: token })).status, 400);
  });

  it('runs now through a confirm page that mints the id: its form submitted twice starts one run', async () => {
    const { app, queue } = await fixture();
    const tasks = queue.tasks.length;
    const { agent, res } = await page(app, '/schedules/run-now?name=nightly');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-security-policy'] as string, /default-src 'none'/);
    assert.equal(queue.tasks.length, tasks, 'the confirm page does nothing');
    const fields = Object.fromEntries([...res.text.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
    assert.equal(fields.name, 'nightly');
    assert.match(fields.id!, /^now-[A-Za-z0-9_-]{16}$/);
    assert.equal((await post(agent, '/schedules/run-now', { ...fields, csrf: undefined })).status, 403);
    assert.equal(queue.tasks.length, tasks, 'refused: nothing started');
    const [first, second] = [await post(agent, '/schedules/run-now', fields), await post(agent, '/schedules/run-now', fields)];
    for (const answer of [first, second]) {
      assert.equal(answer.status, 303);
      assert.equal(answer.headers.location, `${BASE}/schedules?done=started&name=nightly`);
    }
    assert.deepEqual(queue.tasks.slice(tasks).map((t) => t.path), ['/nightly'], 'one run');
    const view = await jsonOf(app, 'nightly');
    assert.equal(view.started, 1, 'counted once');
    assert.equal(view.last.outcome, 'started');
    const again = await page(app, '/schedules/run-now?name=nightly');
    const id = /name="id" value="([^"]*)"/.exec(again.res.text)?.[1];
    assert.ok(id && id !== fields.id, 'each confirm page mints its own id');
    assert.equal((await post(agent, '/schedules/run-now', { ...fields, id: 'bad' })).status, 400);
  });

  it('says a schedule is not declared by this code, and offers no Run now for it', async () => {
    const { options, store } = await fixture();
    const other = new Locker(options);
    const app = express();
    app.use(BASE, other.statusRouter({ authenticate: operatorAuth, kinds: ['Order'], refreshSeconds: 0 }));
    const { agent, res, token } = await page(app, '/schedules');
    const row = /<tr data-schedule="every-5"[^]*?<\/tr>/.exec(res.text)?.[0] ?? '';
    assert.match(row, /data-declared="false"/);
    assert.match(row, /not declared by this code/);
    assert.doesNotMatch(row, /run-now|>Run now/);
    assert.deepEqual((await jsonOf(app, 'every-5')).actions, ['pause'], 'the JSON offers no run now either');
    assert.equal((await agent.get(`${BASE}/schedules/run-now?name=every-5`).set('authorization', OPERATOR.token)).status, 409);
    const refused = await post(agent, '/schedules/run-now', { name: 'every-5', id: 'now-abcdefghijklmnop', csrf: token });
    assert.equal(refused.status, 409);
    assert.ok(store, 'the store is shared');
  });

  it('escapes a hostile schedule name everywhere it shows', async () => {
    const { locker, app, clock } = await fixture();
    locker.recurring(HOSTILE, { cron: '* * * * *', path: '/run' });
    clock.now += 60_000;
    await locker.tick();
    for (const path of ['/schedules', '/', `/schedules/run-now?name=${encodeURIComponent(HOSTILE)}`]) {
      const { res } = await page(app, path);
      assert.equal(res.status, 200, path);
      assert.doesNotMatch(res.text, /<script/, path);
      assert.doesNotMatch(res.text, /alert\("x"\)/, path);
      assert.ok(res.text.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;'), path);
    }
    const { agent, res } = await page(app, `/schedules/run-now?name=${encodeURIComponent(HOSTILE)}`);
    const token = /name="csrf" value="([\w-]+)"/.exec(res.text)![1]!;
    const paused = await post(agent, '/schedules/pause', { name: HOSTILE, csrf: token });
    assert.equal(paused.status, 303);
    const shown = await agent.get(paused.headers.location!).set('authorization', OPERATOR.token);
    assert.doesNotMatch(shown.text, /<script/);
    assert.match(shown.text, /<strong>&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;&#39;&amp;<\/strong>: Paused/);
    assert.equal((await jsonOf(app, HOSTILE)).state, 'paused', 'the JSON keeps the name as it is');
  });
});

// The status router without a browser: authentication required on every route (nothing leaks to
// a refused request), CSRF checks on actions, JSON views, bad input answered 400 with a log line.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { ConfigError } from '../../src/errors/errors';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState, type Authenticator, type Properties } from '../../src/types';
import { MemoryLogger } from '../support/task-app';

const TOKEN = 'Bearer operator-secret';
const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no operator token' });
const MIN = 60_000;

async function fixture() {
  const store = new MemoryStore({ projectId: 'shop' });
  const logger = new MemoryLogger();
  const locker = new Locker({ store, authenticate: false, logger, leaseDuration: MIN, stallAfter: 5 * MIN });
  const key = (name: string) => new Key({ path: ['Order', name] });
  const lock = (state: string, ageMs: number, extra: Properties = {}): Properties =>
    ({ total: 5, lock_ts: new Date(Date.now() - ageMs), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: state, lock_chain: 'c1', lock_task: 't1', ...extra });
  await store.transaction(async (tx) => {
    tx.put(key('failed'), lock(StepState.failed, 20 * MIN, { lock_try: 3, lock_err: 'Error: <b>card</b> declined\n    at charge (/srv/charge.ts:1:1)' }), UNINDEXED_LOCK_FIELDS);
    tx.put(key('stale'), lock(StepState.scheduled, 2 * MIN, { lock_req: 'attempt-crashed' }), UNINDEXED_LOCK_FIELDS);
    tx.put(key('stalled'), lock(StepState.scheduled, 10 * MIN), UNINDEXED_LOCK_FIELDS);
    tx.putLedger({
      id: 't1', key: key('stalled'), seq: 1, chain: 'c1', path: '/charge', body: '{"total":5}', createdAt: new Date(Date.now() - 12 * MIN),
      task: 't1-s2-abcdef', sends: 2, sentAt: new Date(Date.now() - 6 * MIN), failures: 0, due: new Date(Date.now() + MIN),
    });
  });
  const app = express();
  app.use('/ops/locker', locker.statusRouter({ authenticate: auth, kinds: ['Order'], columns: [{ title: 'Total', value: (s) => String(s.properties.total) }] }));
  return { app, locker, store, key, logger };
}

describe('statusRouter', () => {
  it('requires an authenticator: no anonymous default', () => {
    const locker = new Locker({ store: new MemoryStore(), authenticate: false });
    assert.throws(() => locker.statusRouter({ kinds: ['Order'] } as unknown as Parameters<Locker['statusRouter']>[0]), (e: unknown) => e instanceof ConfigError && /authenticate` is required/.test(e.message));
    assert.throws(() => locker.statusRouter({ authenticate: auth, kinds: [] }), ConfigError);
    assert.throws(() => locker.statusRouter({ authenticate: auth, kinds: ['Order'], refresh: 5 } as unknown as Parameters<Locker['statusRouter']>[0]), /unknown option `refresh`/);
  });

  it('gives a request without authentication nothing, on every route', async () => {
    const { app, locker, key } = await fixture();
    const encoded = locker.encodeKey(key('failed'));
    for (const path of ['/', '/steps.json', `/step?key=${encoded}`, `/step.json?key=${encoded}`]) {
      const res = await request(app).get(`/ops/locker${path}`);
      assert.equal(res.status, 401, path);
      assert.equal(res.text, 'authentication required\n');
      assert.equal(res.headers['set-cookie'], undefined, 'not even a CSRF cookie');
    }
    const post = await request(app).post('/ops/locker/step/cancel').type('form').send({ key: encoded, seq: '1', csrf: 'x' });
    assert.equal(post.status, 401);
    assert.equal((await locker.inspect().step(key('failed')))?.state, 'failed', 'nothing changed');
  });

  it('mounted at the root, leaves the app\'s other routes alone', async () => {
    const locker = new Locker({ store: new MemoryStore(), authenticate: false });
    const app = express();
    app.use(locker.statusRouter({ authenticate: auth, kinds: ['Order'] }));
    app.post('/task', (_req, res) => { res.send('task ran'); });
    app.get('/health', (_req, res) => { res.send('ok'); });
    assert.equal((await request(app).post('/task')).text, 'task ran');
    assert.equal((await request(app).get('/health')).text, 'ok');
    assert.equal((await request(app).get('/')).status, 401);
    assert.equal((await request(app).get('/').set('authorization', TOKEN)).status, 200);
  });

  it('lists steps as JSON with marks, ages, extra columns and actions', async () => {
    const { app } = await fixture();
    const res = await request(app).get('/ops/locker/steps.json').set('authorization', TOKEN);
    assert.equal(res.status, 200);
    const body = res.body as { sections: Array<{ state: string; steps: Array<Record<string, unknown>> }> };
    const byState = Object.fromEntries(body.sections.map((s) => [s.state, s.steps]));
    assert.deepEqual(byState.failed!.map((s) => s.keyPath), ['Order:"failed"']);
    assert.deepEqual(byState.stalled!.map((s) => s.keyPath), ['Order:"stalled"']);
    assert.deepEqual(byState.stale!.map((s) => s.keyPath), ['Order:"stale"']);
    const stale = byState.stale![0]!;
    assert.equal(stale.staleLease, true);
    assert.equal(stale.holder, 'attempt-crashed');
    assert.ok((stale.leaseAgeMs as number) >= 2 * MIN && (stale.leaseAgeMs as number) < 3 * MIN);
    assert.deepEqual(stale.extra, { Total: '5' });
    assert.deepEqual(stale.actions, ['resend', 'cancel']);
    assert.deepEqual(byState.failed![0]!.actions, ['retry']);
    assert.equal(byState.failed![0]!.errorMessage, 'Error: <b>card</b> declined');
  });

  it('shows one step as JSON and HTML with its ledger record and when it started', async () => {
    const { app, locker, key } = await fixture();
    const encoded = encodeURIComponent(locker.encodeKey(key('stalled')));
    const json = await request(app).get(`/ops/locker/step.json?key=${encoded}`).set('authorization', TOKEN);
    assert.equal(json.status, 200);
    const step = json.body as Record<string, unknown> & { ledger: Record<string, unknown> };
    assert.equal(step.seq, 1);
    assert.equal(step.task, 't1');
    assert.ok(Date.now() - Date.parse(String(step.startedAt)) >= 12 * MIN, 'startedAt is the record\'s createdAt');
    assert.ok((step.startedAgeMs as number) >= 12 * MIN && (step.startedAgeMs as number) < 13 * MIN);
    assert.equal(step.ledger.id, 't1');
    assert.equal(step.ledger.task, 't1-s2-abcdef');
    assert.equal(step.ledger.sends, 2);
    assert.equal(step.ledger.failures, 0);
    assert.equal(step.ledger.path, '/charge');
    assert.ok((step.ledger.dueInMs as number) > 0 && (step.ledger.dueInMs as number) <= MIN);
    assert.match(String(step.ledger.sentAt), /^\d{4}-\d\d-\d\dT/);
    const page = await request(app).get(`/ops/locker/step?key=${encoded}`).set('authorization', TOKEN);
    assert.match(page.text, /data-age="started">12 min( \d+ s)?<\/span>/);
    assert.match(page.text, /<code>t1-s2-abcdef<\/code><div class="help">send <span data-ledger="sends">2<\/span>, <span class="age" data-age="sent">6 min( \d+ s)?<\/span> ago/);
    assert.match(page.text, /looks again in <span class="age" data-age="due">(59 s|1 min)<\/span>/);
    const failed = await request(app).get(`/ops/locker/step.json?key=${encodeURIComponent(locker.encodeKey(key('failed')))}`).set('authorization', TOKEN);
    assert.equal((failed.body as Record<string, unknown>).ledger, undefined, 'no record stored for it');
  });

  it('escapes what it shows and marks stale leases and stalled steps on the page', async () => {
    const { app } = await fixture();
    const res = await request(app).get('/ops/locker/').set('authorization', TOKEN);
    assert.equal(res.status, 200);
    assert.match(res.text, /<meta http-equiv="refresh" content="30">/);
    assert.match(res.text, /<meta name="viewport"/);
    assert.ok(res.text.includes('Error: &lt;b&gt;card&lt;/b&gt; declined'));
    assert.ok(!res.text.includes('<b>card</b>'));
    assert.match(res.text, /data-state="stale" data-stale="true" data-stalled="false"/);
    assert.match(res.text, /data-state="stalled" data-stale="false" data-stalled="true"/);
    assert.match(res.text, /<span class="mark stale">stale lease<\/span>/);
    assert.match(res.text, /data-age="lease">2 min( \d+ s)?<\/span>/);
    assert.match(String(res.headers['set-cookie']), /locker-csrf=[\w-]+; Path=\/; HttpOnly; SameSite=Strict/);
  });

  it('sends a Content-Security-Policy and forbids framing on every answer, refusals included', async () => {
    const { app, locker, key } = await fixture();
    const encoded = encodeURIComponent(locker.encodeKey(key('failed')));
    const answers = [
      await request(app).get('/ops/locker/').set('authorization', TOKEN),
      await request(app).get(`/ops/locker/step?key=${encoded}`).set('authorization', TOKEN),
      await request(app).get('/ops/locker/steps.json').set('authorization', TOKEN),
      await request(app).get('/ops/locker/step?key=not-a-key').set('authorization', TOKEN),
      await request(app).get('/ops/locker/'),
      await request(app).post('/ops/locker/step/cancel').set('authorization', TOKEN).type('form').send({ key: 'x', seq: '1' }),
    ];
    for (const res of answers) {
      const csp = String(res.headers['content-security-policy']);
      const directives = new Map(csp.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));
      assert.equal(directives.get('default-src'), "'none'", `${res.status} ${csp}`);
      assert.equal(directives.get('frame-ancestors'), "'none'");
      assert.equal(directives.get('form-action'), "'self'");
      assert.match(directives.get('style-src') ?? '', /^'sha256-[A-Za-z0-9+/]+=*'$/, 'the inline style sheet by its hash, no unsafe-inline');
      assert.equal(res.headers['x-frame-options'], 'DENY');
    }
    // The hash is that of the one <style> the page carries, so the page is styled under the policy.
    const style = /<style>([\s\S]*?)<\/style>/.exec(answers[0]!.text)![1]!;
    const hash = createHash('sha256').update(style).digest('base64');
    assert.ok(String(answers[0]!.headers['content-security-policy']).includes(`'sha256-${hash}'`));
    assert.doesNotMatch(answers[0]!.text, /<script|style="/, 'nothing else the policy would block');
  });

  it('pages through a state with the "more" link', async () => {
    const { store, locker, key } = await fixture();
    await store.transaction(async (tx) => {
      tx.put(key('stalled-older'), { lock_ts: new Date(Date.now() - 30 * MIN), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled }, UNINDEXED_LOCK_FIELDS);
    });
    const app = express();
    app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order'], pageSize: 1 }));
    const first = await request(app).get('/ops/?state=stalled').set('authorization', TOKEN);
    assert.match(first.text, /Order:&quot;stalled-older&quot;/);
    assert.doesNotMatch(first.text, /Order:&quot;stalled&quot;</);
    const more = /<p class="more"><a href="([^"]+)">/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(more, 'a link to the next page');
    const second = await request(app).get(more).set('authorization', TOKEN);
    assert.equal(second.status, 200);
    assert.match(second.text, /Order:&quot;stalled&quot;</);
    assert.doesNotMatch(second.text, /stalled-older/);
  });

  it('refuses an action without the CSRF token, from another site or another origin', async () => {
    const { app, locker, key } = await fixture();
    const agent = request.agent(app);
    const page = await agent.get('/ops/locker/').set('authorization', TOKEN);
    const token = /name="csrf" value="([\w-]+)"/.exec(page.text)![1]!;
    const form = { key: locker.encodeKey(key('stalled')), seq: '1', csrf: token };
    const post = () => agent.post('/ops/locker/step/cancel').set('authorization', TOKEN).type('form');
    assert.equal((await post().send({ ...form, csrf: 'forged-token-forged-token-forged-token' })).status, 403);
    assert.equal((await post().send({ key: form.key, seq: '1' })).status, 403);
    assert.equal((await post().set('sec-fetch-site', 'cross-site').send(form)).status, 403);
    assert.equal((await post().set('origin', 'https://evil.example').send(form)).status, 403);
    assert.equal((await request(app).post('/ops/locker/step/cancel').set('authorization', TOKEN).type('form').send(form)).status, 403, 'no cookie');
    assert.equal((await locker.inspect().step(key('stalled')))?.state, 'stalled', 'nothing changed');
    const done = await post().set('sec-fetch-site', 'same-origin').send(form);
    assert.equal(done.status, 303);
    assert.equal(done.headers.location, `/ops/locker/step?key=${encodeURIComponent(form.key)}&done=cancel`);
    assert.equal((await locker.inspect().step(key('stalled')))?.state, 'cancelled');
  });

  it('refuses an action on a step that moved on (409) and bad input (400), logged', async () => {
    const { app, locker, key, logger } = await fixture();
    const agent = request.agent(app);
    const page = await agent.get('/ops/locker/').set('authorization', TOKEN);
    const token = /name="csrf" value="([\w-]+)"/.exec(page.text)![1]!;
    const post = (form: Record<string, string>) => agent.post('/ops/locker/step/cancel').set('authorization', TOKEN).type('form').send({ csrf: token, ...form });
    const moved = await post({ key: locker.encodeKey(key('stale')), seq: '7' });
    assert.equal(moved.status, 409);
    assert.match(moved.text, /is at step 1 now, not step 7/);
    const notCancellable = await post({ key: locker.encodeKey(key('failed')), seq: '1' });
    assert.equal(notCancellable.status, 409);
    assert.equal((await post({ key: 'not-a-key', seq: '1' })).status, 400);
    assert.equal((await agent.get('/ops/locker/?state=lost').set('authorization', TOKEN)).status, 400);
    assert.equal((await agent.get('/ops/locker/?kind=Secret').set('authorization', TOKEN)).status, 400);
    assert.equal((await agent.get('/ops/locker/step.json?key=').set('authorization', TOKEN)).status, 400);
    const notDone = logger.lines.filter((l) => l.message === 'status page request not done').map((l) => l.fields?.status);
    assert.deepEqual(notDone, [409, 409, 400, 400, 400, 400]);
  });
});

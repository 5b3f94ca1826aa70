// The status router's bulk actions without a browser, on the in-memory store: authentication on
// every route, CSRF on the confirmation, bad filters 400, a reused id 409, what the pages show
// (escaped, under the CSP), and an operation's steps delivered by hand: a resend of stalled steps
// acts on each once, and a duplicate of a page's task does nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { StepState, type Properties, type TaskRequest } from '../../src/types';
import { NOBODY } from '../../src/ops/bulk/step';
import { operationKey } from '../../src/ops/bulk/operation';
import { RecordingQueue } from '../support/recording-queue';
import { MemoryLogger } from '../support/task-app';
import { OPERATOR, operatorAuth } from '../support/bulk-rig';

const MIN = 60_000;
const KIND = 'Order';

async function fixture(options: { principal?: boolean } = {}) {
  const store = new MemoryStore({ projectId: 'shop' });
  const logger = new MemoryLogger();
  const queue = new RecordingQueue();
  const locker = new Locker({ store, queue, authenticate: false, logger, leaseDuration: MIN, stallAfter: 5 * MIN });
  const key = (name: string) => new Key({ path: [KIND, name] });
  const lock = (name: string, state: string, ageMs: number, extra: Properties = {}): Properties =>
    ({ total: 5, lock_ts: new Date(Date.now() - ageMs), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: state, lock_chain: `c-${name}`, lock_task: `t-${name}`, ...extra });
  await store.transaction(async (tx) => {
    const seed = (name: string, state: string, ageMs: number, extra: Properties = {}) => {
      tx.put(key(name), lock(name, state, ageMs, extra), UNINDEXED_LOCK_FIELDS);
      tx.putLedger({
        id: `t-${name}`, key: key(name), seq: 1, chain: `c-${name}`, path: '/charge', body: '{}', createdAt: new Date(Date.now() - 12 * MIN),
        task: `t-${name}`, sends: 1, sentAt: new Date(Date.now() - ageMs), failures: 0, due: new Date(Date.now() + MIN),
      });
    };
    seed('failed-1', StepState.failed, 20 * MIN, { lock_try: 3, lock_err: 'Error: declined' });
    seed('failed-2', StepState.failed, 10 * MIN, { lock_try: 3, lock_err: 'Error: declined' });
    seed('stalled-1', StepState.scheduled, 10 * MIN);
    seed('stalled-2', StepState.scheduled, 7 * MIN);
    seed('queued', StepState.scheduled, MIN);
  });
  const app = express();
  const authenticate = options.principal === false
    ? (req: Parameters<typeof operatorAuth>[0]) => (req.headers.authorization === OPERATOR.token ? { ok: true as const } : { ok: false as const, status: 401 as const, reason: 'no' })
    : operatorAuth;
  app.use('/ops/locker', locker.statusRouter({ authenticate, kinds: [KIND], refreshSeconds: 0 }));
  return { app, locker, store, key, logger, queue };
}

/** The confirm page of `query`, its form's fields, and the agent holding its CSRF cookie. */
async function confirmPage(app: express.Express, query: string) {
  const agent = request.agent(app);
  const page = await agent.get(`/ops/locker/bulk?${query}`).set('authorization', OPERATOR.token);
  const fields = Object.fromEntries([...page.text.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
  return { agent, page, fields };
}

/** Delivers a recorded task to the app, as the queue would. */
function deliver(app: express.Express, task: TaskRequest) {
  return request(app).post(task.path).set(task.headers).set('content-type', 'application/json').send(task.body);
}

describe('statusRouter bulk actions', () => {
  it('gives a request without authentication nothing, on every bulk route', async () => {
    const { app, store } = await fixture();
    for (const path of ['/bulk?action=retry&kind=Order', '/operation?id=op-12345678', '/operation.json?id=op-12345678', '/operations', '/operations.json']) {
      const res = await request(app).get(`/ops/locker${path}`);
      assert.equal(res.status, 401, path);
      assert.equal(res.headers['set-cookie'], undefined, 'not even a CSRF cookie');
    }
    const post = await request(app).post('/ops/locker/bulk').type('form').send({ action: 'retry', kind: KIND, id: 'op-12345678', csrf: 'x' });
    assert.equal(post.status, 401);
    assert.equal(await store.get(operationKey('op-12345678', undefined)), undefined);
  });

  it('shows the count first, under the CSP; confirming needs the CSRF token, from this site', async () => {
    const { app, locker, queue, store } = await fixture();
    const { agent, page, fields } = await confirmPage(app, 'action=retry&kind=Order');
    assert.equal(page.status, 200);
    assert.match(page.headers['content-security-policy'] as string, /default-src 'none'/);
    assert.doesNotMatch(page.text, /<script|style=/);
    assert.match(page.text, /<strong>2<\/strong> failed chains match now/);
    assert.match(page.text, /Retry 2 failed chains/);
    assert.match(fields.id!, /^op-[A-Za-z0-9_-]{16}$/);
    const post = () => agent.post('/ops/locker/bulk').set('authorization', OPERATOR.token).type('form');
    assert.equal((await post().send({ ...fields, csrf: 'forged-token-forged-token-forged-token' })).status, 403);
    assert.equal((await post().send({ ...fields, csrf: undefined })).status, 403);
    assert.equal((await post().set('sec-fetch-site', 'cross-site').send(fields)).status, 403);
    assert.equal((await post().set('origin', 'https://evil.example').send(fields)).status, 403);
    assert.equal((await request(app).post('/ops/locker/bulk').set('authorization', OPERATOR.token).type('form').send(fields)).status, 403, 'no cookie');
    assert.equal(await store.get(operationKey(fields.id!, undefined)), undefined, 'nothing started');
    assert.equal(queue.tasks.length, 0);
    const done = await post().send(fields);
    assert.equal(done.status, 303);
    assert.equal(done.headers.location, `/ops/locker/operation?id=${fields.id}`);
    const op = await locker.inspect().operation(fields.id!);
    assert.deepEqual([op?.state, op?.matched, op?.by], ['running', 2, OPERATOR.principal]);
    assert.deepEqual(queue.tasks.map((t) => t.path), ['/ops/locker/operations/step'], 'its first page is a task to the router\'s task route');
  });

  it('answers 400 to a bad action or filter and 409 to an id that names another operation, logged, nothing started', async () => {
    const { app, logger, queue } = await fixture();
    for (const query of ['action=explode&kind=Order', 'action=retry', 'action=retry&kind=Secret', 'action=cancel&kind=Order', 'action=resend&kind=Order&kickoff=k1',
      'action=retry&fanOut=xyz', 'action=retry&kind=Order&namespace=other', 'action=retry&kind=Order&kind=Order']) {
      const res = await request(app).get(`/ops/locker/bulk?${query}`).set('authorization', OPERATOR.token);
      assert.equal(res.status, 400, query);
    }
    const { agent, fields } = await confirmPage(app, 'action=retry&kind=Order');
    const post = (form: Record<string, string | undefined>) => agent.post('/ops/locker/bulk').set('authorization', OPERATOR.token).type('form').send(form);
    assert.equal((await post({ ...fields, id: 'short' })).status, 400, 'a bad id');
    assert.equal((await post({ ...fields, id: undefined })).status, 400, 'no id');
    assert.equal((await post({ ...fields, action: 'cancel' })).status, 400, 'cancel without a kickoff');
    assert.equal(queue.tasks.length, 0, 'nothing started');
    assert.equal((await post(fields)).status, 303);
    const reused = await post({ ...fields, action: 'resend' });
    assert.equal(reused.status, 409, 'the id names the retry');
    assert.match(reused.text, /already names another operation/);
    assert.equal(queue.tasks.length, 1, 'one operation');
    assert.equal((await agent.get('/ops/locker/operation?id=op-nothing-here').set('authorization', OPERATOR.token)).status, 400);
    assert.equal((await agent.get('/ops/locker/operations.json?limit=1000').set('authorization', OPERATOR.token)).status, 400);
    const notDone = logger.lines.filter((l) => l.message === 'status page request not done').map((l) => l.fields?.status);
    assert.equal(notDone.filter((s) => s === 400).length, 13);
    assert.equal(notDone.filter((s) => s === 409).length, 1);
  });

  it('resends the stalled steps once each; a duplicate of a page\'s task does nothing; the audit says nobody was named', async () => {
    const { app, locker, queue, logger } = await fixture({ principal: false });
    const { agent, page, fields } = await confirmPage(app, 'action=resend&kind=Order');
    assert.match(page.text, /<strong>2<\/strong> stalled steps match now/);
    assert.equal((await agent.post('/ops/locker/bulk').set('authorization', OPERATOR.token).type('form').send(fields)).status, 303);
    const step = queue.tasks[0]!;
    assert.equal((await deliver(app, step)).status, 200);
    const resent = queue.tasks.slice(1).map((t) => t.path);
    assert.deepEqual(resent, ['/charge', '/charge'], 'a new task for each stalled step; none for the queued one');
    const op = await locker.inspect().operation(fields.id!);
    assert.deepEqual([op?.chain, op?.done, op?.skipped, op?.failed, op?.pages, op?.by], ['done', 2, 0, 0, 1, undefined]);
    assert.equal((await deliver(app, step)).status, 200);
    assert.equal(queue.tasks.length, 3, 'the duplicate did nothing');
    const audit = logger.lines.filter((l) => l.message.startsWith('bulk operation'));
    assert.deepEqual(audit.map((l) => [l.message, l.fields?.by]), [['bulk operation started', NOBODY], ['bulk operation done', NOBODY]]);
    const shown = await agent.get(`/ops/locker/operation?id=${fields.id}`).set('authorization', OPERATOR.token);
    assert.match(shown.text, /2 of 2: 2 done, 0 skipped, 0 failed/);
    assert.match(shown.text, /<svg width="200" height="10"/);
    const json = await agent.get(`/ops/locker/operation.json?id=${fields.id}`).set('authorization', OPERATOR.token);
    assert.deepEqual([json.body.done, json.body.chain, json.body.description], [2, 'done', 'resend every stalled Order step']);
  });

  it('cancels a kickoff\'s live chains and no other', async () => {
    const { app, locker, queue, key, store } = await fixture();
    await locker.scheduleMany(['k1', 'k2', 'k3'].map((n) => ({ key: key(n), entity: {}, path: '/charge' })), { kickoffId: 'live-kickoff' });
    await locker.scheduleMany(['o1', 'o2'].map((n) => ({ key: key(n), entity: {}, path: '/charge' })), { kickoffId: 'other-kickoff' });
    const started = await locker.bulk('cancel', { kind: KIND, kickoff: 'live-kickoff' }, { mount: '/ops/locker', id: 'cancel-live' });
    assert.equal(started.operation.matched, 3);
    const step = queue.tasks.find((t) => t.path === '/ops/locker/operations/step')!;
    assert.equal((await deliver(app, step)).status, 200);
    const op = await locker.inspect().operation('cancel-live');
    assert.deepEqual([op?.chain, op?.done, op?.skipped], ['done', 3, 0]);
    for (const n of ['k1', 'k2', 'k3']) assert.equal((await store.get(key(n)))?.lock_state, StepState.cancelled, n);
    for (const n of ['o1', 'o2']) assert.equal((await store.get(key(n)))?.lock_state, StepState.scheduled, n);
  });

  it('a chain acted on after the operation was confirmed is no longer one of its targets', async () => {
    const { app, locker, queue, key } = await fixture();
    const started = await locker.bulk('retry', { kind: KIND }, { mount: '/ops/locker', id: 'retry-fenced' });
    // The page's targets, acted on by someone else first (an operator's click): skipped, not acted on again.
    await locker.retry(key('failed-1'));
    assert.equal((await deliver(app, queue.tasks[0]!)).status, 200);
    const op = await locker.inspect().operation(started.operation.id);
    assert.deepEqual([op?.done, op?.skipped], [1, 0], 'failed-1 moved on before its page: it is no longer a target');
    assert.equal(queue.tasks.filter((t) => t.path === '/charge').length, 2, 'one new task per failed chain');
  });
});

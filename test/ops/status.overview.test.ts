// The status router's overview at scale, without a browser: what needs a person comes first
// across kinds (failed, stalled, then alerts owed), a step re-sent within the sweep's threshold is
// queued and not stalled, and the search box takes a key as the page shows it, an encoded key or
// a chain id.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { MemoryStore } from '../../src/store/memory/store';
import { LocalQueue } from '../../src/queue/local';
import { StepState, type Authenticator, type Properties } from '../../src/types';
import { MemoryLogger } from '../support/task-app';
import { countingStore } from '../support/counting-store';

const TOKEN = 'Bearer operator-secret';
const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no operator token' });
const MIN = 60_000;

async function fixture() {
  const store = new MemoryStore({ projectId: 'shop' });
  const locker = new Locker({ store, authenticate: false, logger: new MemoryLogger(), leaseDuration: MIN, stallAfter: 5 * MIN });
  const order = (name: string) => new Key({ path: ['Order', name] });
  const line = (name: string) => new Key({ path: ['Order', 'o-1', 'Line', name] });
  const lock = (state: string, ageMs: number, extra: Properties = {}): Properties =>
    ({ lock_ts: new Date(Date.now() - ageMs), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: state, lock_chain: 'c-other', lock_task: 't-other', ...extra });
  const record = (key: Key, id: string, sentAgoMs: number, sends: number) => ({
    id, key, seq: 1, chain: 'c', path: '/charge', body: '{}', createdAt: new Date(Date.now() - 30 * MIN),
    task: `${id}-s${sends}-x`, sends, sentAt: new Date(Date.now() - sentAgoMs), failures: 0, due: new Date(Date.now() + MIN),
  });
  await store.transaction(async (tx) => {
    // Order sorts before Line in the config below: a failed Line must still come first.
    tx.put(order('waiting'), lock(StepState.scheduled, 30 * 1000, { lock_task: 't-waiting' }), UNINDEXED_LOCK_FIELDS);
    tx.put(line('failed'), lock(StepState.failed, 20 * MIN, { lock_try: 3, lock_chain: 'chain-of-the-failed-line', lock_err: 'Error: declined' }), UNINDEXED_LOCK_FIELDS);
    // Both waited 10 minutes; one's task was re-sent a minute ago (a backlog), the other's 8 minutes ago (lost).
    tx.put(order('queued'), lock(StepState.scheduled, 10 * MIN, { lock_task: 't-queued' }), UNINDEXED_LOCK_FIELDS);
    tx.putLedger(record(order('queued'), 't-queued', 1 * MIN, 7));
    tx.put(order('stalled'), lock(StepState.scheduled, 10 * MIN, { lock_task: 't-stalled' }), UNINDEXED_LOCK_FIELDS);
    tx.putLedger(record(order('stalled'), 't-stalled', 8 * MIN, 2));
    // A failure whose alert was claimed and never marked sent; its record is due.
    tx.put(order('owes'), lock(StepState.failed, 2 * MIN, { lock_task: 't-owes', lock_try: 3, lock_alerts: ['failure:1:attempt-9'] }), UNINDEXED_LOCK_FIELDS);
    tx.putLedger({ ...record(order('owes'), 't-owes', 3 * MIN, 1), due: new Date(Date.now() - 1000) });
  });
  const app = express();
  app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order', 'Line'] }));
  return { app, locker, order, line };
}

const get = (app: express.Express, path: string) => request(app).get(`/ops${path}`).set('authorization', TOKEN);

describe('status overview', () => {
  it('opens on failed steps of every kind, then stalled ones, then alerts owed, then the rest', async () => {
    const { app } = await fixture();
    const res = await get(app, '/');
    assert.equal(res.status, 200);
    const html = res.text;
    const at = (needle: string) => {
      const i = html.indexOf(needle);
      assert.ok(i >= 0, `the page has ${needle}`);
      return i;
    };
    const failedLine = at('data-kind="Line" data-state="failed"');
    const failedOrder = at('data-kind="Order" data-state="failed"');
    const stalled = at('data-kind="Order" data-state="stalled"');
    const owed = at('data-state="alerts-owed"');
    const scheduled = at('data-kind="Order" data-state="scheduled"');
    assert.ok(Math.max(failedLine, failedOrder) < stalled, 'failed steps of both kinds come before any stalled one');
    assert.ok(stalled < owed && owed < scheduled, 'then stalled, then alerts owed, then the rest');
  });

  it('shows a step re-sent within the sweep\'s threshold as queued with its sends, and only the lost one as stalled', async () => {
    const { app } = await fixture();
    const res = await get(app, '/steps.json');
    const sections = (res.body as { sections: Array<{ kind: string; state: string; steps: Array<{ keyPath: string; state: string; stalled: boolean; queued?: { sends: number } }> }> }).sections;
    const inState = (state: string) => sections.filter((s) => s.state === state).flatMap((s) => s.steps.map((x) => x.keyPath));
    assert.deepEqual(inState('stalled'), ['Order:"stalled"']);
    assert.ok(inState('scheduled').includes('Order:"queued"'), 'the queued one is listed as scheduled');
    const queued = sections.flatMap((s) => s.steps).find((x) => x.keyPath === 'Order:"queued"')!;
    assert.equal(queued.state, 'scheduled');
    assert.equal(queued.stalled, false);
    assert.equal(queued.queued?.sends, 7);
    const page = await get(app, '/?state=scheduled&kind=Order');
    assert.match(page.text, /queued · sent <span data-queued="sends">7<\/span>×/);
  });

  it('lists an entity that owes an alert, found through the records due, marked on its row', async () => {
    const { app } = await fixture();
    const body = (await get(app, '/steps.json')).body as { alertsOwed?: { cut: boolean; steps: Array<{ keyPath: string; alertsOwed: number }> } };
    assert.deepEqual(body.alertsOwed?.steps.map((s) => [s.keyPath, s.alertsOwed]), [['Order:"owes"', 1]]);
    assert.equal(body.alertsOwed?.cut, false);
    assert.match((await get(app, '/')).text, /1 alert owed/);
  });

  it('finds an entity by its key as the page shows it, ancestors included, and goes straight to it', async () => {
    const { app, locker, line } = await fixture();
    const res = await get(app, `/search?q=${encodeURIComponent('Order:"o-1"/Line:"failed"')}`);
    assert.equal(res.status, 303);
    assert.equal(res.headers.location, `/ops/step?key=${encodeURIComponent(locker.encodeKey(line('failed')))}`);
  });

  it('finds an entity by its encoded key and by its chain id', async () => {
    const { app, locker, order } = await fixture();
    const encoded = await get(app, `/search.json?q=${encodeURIComponent(locker.encodeKey(order('stalled')))}`);
    assert.deepEqual((encoded.body as { found: Array<{ keyPath: string; by: string }> }).found.map((f) => [f.keyPath, f.by]), [['Order:"stalled"', 'encoded key']]);
    const chain = await get(app, '/search.json?q=chain-of-the-failed-line');
    assert.deepEqual((chain.body as { found: Array<{ keyPath: string; by: string }> }).found.map((f) => [f.keyPath, f.by]), [['Order:"o-1"/Line:"failed"', 'chain id']]);
    const many = await get(app, '/search?q=c-other');
    assert.equal(many.status, 200, 'several matches: a list');
    assert.match(many.text, /<span data-count="found">4<\/span> found/, "the four entities of chain c-other");
  });

  it('answers a search that finds nothing with a page that says how to write a key, and an empty one with 400', async () => {
    const { app } = await fixture();
    const none = await get(app, `/search?q=${encodeURIComponent('Order:"nope"')}`);
    assert.equal(none.status, 200);
    assert.match(none.text, /Nothing matched <code>Order:&quot;nope&quot;<\/code>/);
    assert.equal((await get(app, '/search?q=%20')).status, 400);
    assert.equal((await get(app, `/search.json?q=${'x'.repeat(1_501)}`)).status, 400);
    const hostile = await get(app, `/search?q=${encodeURIComponent('<script>alert(1)</script>')}`);
    assert.equal(hostile.status, 200);
    assert.ok(!hostile.text.includes('<script>'), 'escaped');
  });

  it('shows what the queue holds when it can tell (LocalQueue), and nothing when it cannot', async () => {
    const queue = new LocalQueue({ baseUrl: 'http://127.0.0.1:9', logger: new MemoryLogger() });
    try {
      const locker = new Locker({ store: new MemoryStore({ projectId: 'shop' }), queue, authenticate: false, logger: new MemoryLogger() });
      for (const name of ['a', 'b']) await locker.schedule(new Key({ path: ['Order', name] }), {}, '/charge', undefined, { delayMs: 3_600_000 });
      const app = express();
      app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order'] }));
      const page = await get(app, '/');
      assert.match(page.text, /Queue: <span data-queue="waiting">2<\/span> tasks waiting, <span data-queue="in-flight">0<\/span> being delivered/);
      assert.deepEqual((await get(app, '/steps.json')).body.queue, { waiting: 2, inFlight: 0 });
    } finally {
      await queue.shutdown();
    }
    const { app } = await fixture();
    assert.ok(!(await get(app, '/')).text.includes('data-queue='), 'a Locker without a queue that tells shows no line');
  });

  it('opens with the numbers per kind, each linked to its list, counted by the store', async () => {
    const { app } = await fixture();
    const res = await get(app, '/');
    assert.match(res.text, /<tr data-kind="Order" data-namespace=""><th>Order<\/th><td data-label="Failed"><a class="count attention" data-count="failed" data-exact="true" href="\/ops\/\?state=failed&amp;kind=Order&amp;namespace=">1<\/a>/);
    assert.match(res.text, /<a class="count attention" data-count="waitingLong" data-exact="true" href="[^"]*">2<\/a>/, 'queued and stalled: both waited 10 minutes');
    const counts = (await get(app, '/steps.json')).body.counts as Array<{ kind: string; failed: { count: number }; live: { count: number } }>;
    assert.deepEqual(counts.map((c) => [c.kind, c.failed.count, c.live.count]), [['Order', 1, 3], ['Line', 1, 0]]);
  });

  it('asks the store a bounded number of times, the same at 2,000 chains and at 6,000, all at once', async () => {
    const callsFor = async (chains: number): Promise<{ calls: number; most: number }> => {
      const store = new MemoryStore({ projectId: 'shop' });
      const counted = countingStore(store);
      await store.transaction(async (tx) => {
        for (let i = 0; i < chains; i++) {
          const state = [StepState.failed, StepState.scheduled, StepState.complete][i % 3]!;
          tx.put(new Key({ path: ['Order', `o${i}`] }), { lock_ts: new Date(Date.now() - (i % 7) * MIN), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: state, lock_chain: `c${i}`, lock_task: `t${i}` }, UNINDEXED_LOCK_FIELDS);
        }
      });
      const locker = new Locker({ store: counted.store, authenticate: false, logger: new MemoryLogger(), stallAfter: 5 * MIN });
      const app = express();
      app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order', 'Line'] }));
      counted.reset();
      assert.equal((await get(app, '/')).status, 200);
      return { calls: counted.calls, most: counted.most };
    };
    // A list reads at most 4 batches (a query and its page's ledger records each) to fill its page:
    // past a few hundred chains every list is full, and the calls stop growing.
    const large = await callsFor(2_000);
    const larger = await callsFor(6_000);
    assert.equal(larger.calls, large.calls, `the same store calls (${large.calls})`);
    const bound = 5 * 2 * 4 * 2 + 2 + 5 * 2; // states × kinds × batches × (query, ledger records) + alerts owed + counts
    assert.ok(large.calls <= bound, `${large.calls} calls, at most ${bound}`);
    assert.ok(large.most >= 10, `the calls run at once (at most ${large.most} in flight)`);
  });

  it('gives a search without authentication nothing', async () => {
    const { app } = await fixture();
    for (const path of ['/search?q=Order:1', '/search.json?q=c-other']) {
      const res = await request(app).get(`/ops${path}`);
      assert.equal(res.status, 401, path);
      assert.equal(res.text, 'authentication required\n');
    }
  });
});

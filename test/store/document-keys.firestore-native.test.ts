// A Locker on FirestoreStore takes and hands out DocumentReferences (issue 40, "the key where the
// user has one"): schedule(), a handler's ctx.key and its factory's key, ctx.schedule(), retry(),
// cancel(), resend(), scheduleMany()'s items and results, ctx.fanOut()'s children, ctx.fanIn()'s,
// retryFanOutChildren() and cancelFanOut(), locker.recurring()'s key, locker.inspect()'s views and the status page (which
// show document paths and find a document by its path), on the Firestore emulator in Native mode
// (started by this file). A document of another client, or anything but a DocumentReference, is
// refused with a TypeError that says so.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import express, { type Express } from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { DocumentReference, type Firestore } from '@google-cloud/firestore';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { FirestoreStore } from '../../src/store/firestore/store';
import { StepState, type Properties } from '../../src/types';
import type { FanInChild, FanOutChild } from '../../src/fanout/types';
import { MemoryLogger } from '../support/task-app';
import { uniqueNamespace } from '../support/emulator';
import { NATIVE_EMULATOR_OPTIONS, useFirestoreNative } from '../support/firestore-native';

const emulator = useFirestoreNative();

/** What each handler run saw: its key's path, whether it was a DocumentReference, the factory's key's path. */
interface Run { path: string; isDocument: boolean; factoryPath: string; seq: number }

/** An order as its factory made it: its stored fields, and the path of the key the factory was given. */
class Order {
  constructor(readonly props: Properties, readonly path: string) {}
  toProperties(): Properties {
    return this.props;
  }
}

describe('a Locker on FirestoreStore keys its chains by DocumentReference', { concurrency: 1 }, () => {
  let firestore: Firestore;
  let locker: Locker<DocumentReference>;
  let local: LocalQueue;
  let server: Server;
  let app: Express;
  const runs: Run[] = [];
  /** Documents whose runs on /flaky fail, until taken out (the retry case). */
  const failing = new Set<string>();
  /** Each fan-out parent's children, by the parent's path; and what each join read. */
  const fans = new Map<string, FanOutChild<DocumentReference>[] | AsyncIterable<FanOutChild<DocumentReference>>>();
  const joins = new Map<string, { outcome: string; children: Array<{ path: string; isDocument: boolean; state: FanInChild['state'] }> }>();
  /** Releases the children blocked on /blocked. */
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => { release = resolve; });
  const namespace = uniqueNamespace('dockeys');
  let n = 0;
  const fresh = (): string => `o-${++n}-${Date.now()}`;

  before(async () => {
    firestore = emulator.client();
    app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const { port } = server.address() as AddressInfo;
    const logger = new MemoryLogger();
    local = new LocalQueue({ baseUrl: `http://127.0.0.1:${port}`, logger, minBackoffMs: 20, maxBackoffMs: 100 });
    locker = new Locker({
      store: new FirestoreStore(firestore, { ...NATIVE_EMULATOR_OPTIONS, namespaces: ['', namespace], projectId: 'locker-native' }),
      queue: local, logger, maxRetries: 1,
    });
    const factory = (props: Properties, key: DocumentReference): Order => new Order(props, key.path);
    app.post('/first', locker.handle<Order>(async (ctx) => {
      runs.push({ path: ctx.key.path, isDocument: ctx.key instanceof DocumentReference, factoryPath: ctx.entity.path, seq: ctx.seq });
      await ctx.schedule('/second');
    }, factory));
    app.post('/second', locker.handle<Order>((ctx) => {
      runs.push({ path: ctx.key.path, isDocument: ctx.key instanceof DocumentReference, factoryPath: ctx.entity.path, seq: ctx.seq });
    }, factory));
    app.post('/flaky', locker.handle((ctx) => {
      if (failing.has(ctx.key.path)) throw new Error('fails until the test takes it out');
      runs.push({ path: ctx.key.path, isDocument: ctx.key instanceof DocumentReference, factoryPath: '', seq: ctx.seq });
    }, (props) => props));
    app.post('/parent', locker.handle(async (ctx) => {
      await ctx.fanOut(fans.get(ctx.key.path)!, { join: '/join' });
    }, (props) => props));
    app.post('/join', locker.handle(async (ctx) => {
      const fanIn = (await ctx.fanIn())!;
      const page = await fanIn.children();
      joins.set(ctx.key.path, {
        outcome: fanIn.outcome,
        children: page.children.map((c) => ({ path: c.key.path, isDocument: c.key instanceof DocumentReference, state: c.state })).sort((a, b) => a.path.localeCompare(b.path)),
      });
    }, (props) => props));
    app.post('/blocked', locker.handle(async () => { await released; }, (props) => props));
    app.use('/ops', locker.statusRouter({ authenticate: () => ({ ok: true }), kinds: ['Order', 'Line'], namespaces: ['', namespace] }));
  });
  after(async () => {
    release();
    await locker.shutdown();
    await local.shutdown();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const stateOf = async (ref: DocumentReference): Promise<Properties | undefined> => (await ref.get()).data();
  /** Resolves once `ref` is in `state` at `lock_seq` `seq` (a chain that completed its step n is at n + 1). */
  const until = async (ref: DocumentReference, state: StepState, seq: number): Promise<Properties> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const data = await stateOf(ref);
      if (data?.lock_state === state && Number(data.lock_seq) === seq) return data;
      if (Date.now() > deadline) throw new Error(`${ref.path} is not ${state} at step ${seq} after 30 s: ${JSON.stringify(data, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  for (const [what, path] of [
    ['a top-level document', (id: string) => `Order/${id}`],
    ['a document in a subcollection (a key with an ancestor)', (id: string) => `Order/${id}/Line/l-1`],
    ['a document of a namespace (LockerNamespaces/<ns>/...)', (id: string) => `LockerNamespaces/${namespace}/Order/${id}`],
  ] as const) {
    it(`runs a chain on ${what}: the handler's ctx.key and the factory's key are that DocumentReference, the lock fields on that document`, async () => {
      const ref = firestore.doc(path(fresh()));
      const scheduled = await locker.schedule(ref, { amountCents: 1200 }, '/first');
      assert.equal(scheduled.seq, 1);
      const data = await until(ref, StepState.complete, 3);
      assert.equal(data.amountCents, 1200n, 'the entity written with the kickoff is that document (the client reads integers as bigint)');
      await local.idle();
      assert.deepEqual(runs.filter((r) => r.path === ref.path), [
        { path: ref.path, isDocument: true, factoryPath: ref.path, seq: 1 },
        { path: ref.path, isDocument: true, factoryPath: ref.path, seq: 2 },
      ]);
    });
  }

  it('cancels and resends by DocumentReference', async () => {
    const ref = firestore.doc(`Order/${fresh()}`);
    await locker.schedule(ref, {}, '/second', undefined, { delayMs: 60_000 });
    const resent = await locker.resend(ref);
    assert.equal(resent.seq, 1);
    assert.equal(resent.sent, true);
    await until(ref, StepState.complete, 2);
    const other = firestore.doc(`Order/${fresh()}`);
    await locker.schedule(other, {}, '/second', undefined, { delayMs: 60_000 });
    assert.deepEqual(await locker.cancel(other), { seq: 1 });
    assert.equal((await stateOf(other))?.lock_state, StepState.cancelled);
  });

  it('retries a step that failed for good by DocumentReference', async () => {
    const ref = firestore.doc(`Order/${fresh()}`);
    failing.add(ref.path);
    await locker.schedule(ref, {}, '/flaky');
    await until(ref, StepState.failed, 1);
    failing.delete(ref.path);
    const retried = await locker.retry(ref);
    assert.equal(retried.seq, 1);
    await until(ref, StepState.complete, 2);
    await local.idle();
    assert.deepEqual(runs.filter((r) => r.path === ref.path), [{ path: ref.path, isDocument: true, factoryPath: '', seq: 1 }]);
  });

  it('refuses a DocumentReference of another client, a Datastore Key, and a document id the store cannot name, writing nothing', async () => {
    const id = fresh();
    const ofAnother = emulator.client().doc(`Order/${id}`);
    await assert.rejects(locker.schedule(ofAnother, {}, '/first'), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, new RegExp(`the DocumentReference Order/${id} is of another Firestore client than the store's`));
      return true;
    });
    await assert.rejects(locker.cancel(ofAnother), TypeError);
    // @ts-expect-error: a FirestoreStore's Locker takes DocumentReferences, not Datastore keys
    await assert.rejects(locker.schedule(new Key({ path: ['Order', id] }), {}, '/first'), {
      name: 'TypeError', message: "a FirestoreStore's Locker takes a DocumentReference (firestore.doc('Order/o-1')); got a Key",
    });
    // @ts-expect-error: nor a path
    await assert.rejects(locker.retry(`Order/${id}`), { name: 'TypeError', message: /got the string "Order\//u });
    await assert.rejects(locker.schedule(firestore.doc(`Order/#${id}`), {}, '/first'), { name: 'TypeError', message: new RegExp(`the document Order/#${id} has no key in a FirestoreStore`) });
    await assert.rejects(locker.resend(firestore.doc(`LockerNamespaces/${namespace}`)), { name: 'TypeError', message: /has no key in a FirestoreStore/u });
    assert.equal((await firestore.doc(`Order/${id}`).get()).exists, false);
    assert.equal((await firestore.doc(`Order/#${id}`).get()).exists, false);
  });

  it('scheduleMany() takes DocumentReferences and answers each item with its own reference; a refused one is failed, the rest start', async () => {
    const refs = [firestore.doc(`Order/${fresh()}`), firestore.doc(`Order/${fresh()}/Line/l-1`), firestore.doc(`LockerNamespaces/${namespace}/Order/${fresh()}`)];
    const ofAnother = emulator.client().doc(`Order/${fresh()}`);
    const result = await locker.scheduleMany([...refs.map((key) => ({ key, entity: { bulk: true }, path: '/second' })), { key: ofAnother, entity: {}, path: '/second' }]);
    assert.deepEqual([result.started, result.busy, result.failed], [3, 0, 1]);
    result.results.slice(0, 3).forEach((r, i) => {
      assert.equal(r.status, 'started');
      assert.equal(r.key, refs[i], 'the item\'s own DocumentReference');
    });
    const refused = result.results[3]!;
    assert.equal(refused.status, 'failed');
    assert.equal(refused.key, ofAnother);
    assert.ok(refused.status === 'failed' && refused.error instanceof TypeError);
    assert.match(refused.error.message, /is of another Firestore client than the store's/u);
    for (const ref of refs) {
      const data = await until(ref, StepState.complete, 2);
      assert.equal(data.bulk, true);
    }
    await local.idle();
    for (const ref of refs) assert.deepEqual(runs.filter((r) => r.path === ref.path).map((r) => r.isDocument), [true]);
    assert.equal((await ofAnother.get()).exists, false);
  });

  it('ctx.fanOut() takes DocumentReferences (from an async source too) and ctx.fanIn() hands them back', async () => {
    const parent = firestore.doc(`Order/${fresh()}`);
    const children = [firestore.doc(`${parent.path}/Line/a`), firestore.doc(`${parent.path}/Line/b`), firestore.doc(`Order/${fresh()}`)];
    fans.set(parent.path, (async function* () {
      for (const key of children) yield { key, path: '/second' };
    })());
    await locker.schedule(parent, {}, '/parent');
    await until(parent, StepState.complete, 3);
    for (const child of children) await until(child, StepState.complete, 2);
    assert.deepEqual(joins.get(parent.path), {
      outcome: 'succeeded',
      children: children.map((c) => ({ path: c.path, isDocument: true, state: 'succeeded' })).sort((a, b) => a.path.localeCompare(b.path)),
    });
    await local.idle();
    for (const child of children) assert.deepEqual(runs.filter((r) => r.path === child.path).map((r) => [r.isDocument, r.seq]), [[true, 1]]);
  });

  it('a fan-out child refused by the key type fails the parent\'s attempt with a TypeError naming the child; nothing of it is written', async () => {
    const parent = firestore.doc(`Order/${fresh()}`);
    const ofAnother = emulator.client().doc(`${parent.path}/Line/x`);
    fans.set(parent.path, [{ key: firestore.doc(`${parent.path}/Line/ok`), path: '/second' }, { key: ofAnother, path: '/second' }]);
    await locker.schedule(parent, {}, '/parent');
    const data = await until(parent, StepState.failed, 1);
    assert.match(String(data.lock_err), /fanOut\(\): child 1: the DocumentReference .*Line\/x is of another Firestore client/u);
    assert.equal((await ofAnother.get()).exists, false);
  });

  it('retryFanOutChildren() and cancelFanOut() take the parent\'s DocumentReference', async () => {
    const parent = firestore.doc(`Order/${fresh()}`);
    const flaky = firestore.doc(`${parent.path}/Line/flaky`);
    const blocked = firestore.doc(`${parent.path}/Line/blocked`);
    failing.add(flaky.path);
    fans.set(parent.path, [{ key: flaky, path: '/flaky' }, { key: blocked, path: '/blocked' }]);
    await locker.schedule(parent, {}, '/parent');
    await until(flaky, StepState.failed, 1);
    failing.delete(flaky.path);
    const retried = await locker.retryFanOutChildren(parent);
    assert.equal(retried.children, 1);
    assert.deepEqual(retried.skipped ?? [], []);
    await until(flaky, StepState.complete, 2);
    const cancelled = await locker.cancelFanOut(parent, { join: true });
    assert.equal(cancelled.children, 1, 'the blocked child, still pending');
    await until(parent, StepState.complete, 3);
    assert.deepEqual(joins.get(parent.path), {
      outcome: 'cancelled',
      children: [{ path: blocked.path, isDocument: true, state: 'cancelled' }, { path: flaky.path, isDocument: true, state: 'succeeded' }],
    });
    await assert.rejects(locker.cancelFanOut(emulator.client().doc(parent.path)), { name: 'TypeError', message: /of another Firestore client/u });
  });

  it('inspect() takes a DocumentReference and its views hand out DocumentReferences, written as document paths; its search reads a path', async () => {
    const parent = firestore.doc(`Order/${fresh()}`);
    // Children in the parent's subcollection: a kind's query (the lists, counts, a row's oldest pending chain, the search by chain id) reads every depth.
    const flaky = firestore.doc(`${parent.path}/Line/${fresh()}`);
    const blocked = firestore.doc(`${parent.path}/Line/${fresh()}`);
    failing.add(flaky.path);
    fans.set(parent.path, [{ key: flaky, path: '/flaky' }, { key: blocked, path: '/blocked' }]);
    await locker.schedule(parent, {}, '/parent');
    await until(flaky, StepState.failed, 1);
    await until(parent, StepState.scheduled, 2);
    const inspector = locker.inspect();

    const detail = (await inspector.step(parent))!;
    assert.ok(detail.key instanceof DocumentReference);
    assert.equal(detail.key.path, parent.path);
    assert.equal(detail.keyPath, parent.path, 'the key written as its document\'s path, not as Order:"…"');
    const fanOut = detail.fanOut!;
    assert.deepEqual(fanOut.failures.map((f) => [f.key instanceof DocumentReference, f.key.path, f.keyPath, f.state]), [[true, flaky.path, flaky.path, 'failed']]);
    assert.deepEqual([fanOut.oldestPending?.key instanceof DocumentReference, fanOut.oldestPending?.key.path, fanOut.oldestPending?.keyPath], [true, blocked.path, blocked.path]);
    assert.deepEqual(detail.fanOuts.map((r) => [r.parent.key instanceof DocumentReference, r.parent.key.path, r.parent.keyPath, r.oldestPending?.key.path, r.oldestPending?.keyPath]),
      [[true, parent.path, parent.path, blocked.path, blocked.path]]);

    const child = (await inspector.step(flaky))!;
    assert.deepEqual([child.keyPath, child.parent?.key instanceof DocumentReference, child.parent?.key.path, child.parent?.keyPath, child.state],
      [flaky.path, true, parent.path, parent.path, 'failed']);
    const row = (await inspector.fanOut(child.parent!.fanOut))!;
    assert.equal(row.parent.key.path, parent.path);

    const failed = await inspector.list({ state: 'failed', kind: 'Line', run: child.run!, limit: 10 });
    assert.deepEqual(failed.steps.map((s) => [s.key instanceof DocumentReference, s.key.path, s.keyPath]), [[true, flaky.path, flaky.path]]);
    const live = await inspector.list({ state: 'running', kind: 'Line', run: child.run!, limit: 10 });
    assert.deepEqual(live.steps.map((s) => s.key.path), [blocked.path]);
    const [counted] = await inspector.counts({ kinds: ['Line'], namespaces: [''], run: child.run! });
    assert.deepEqual([counted!.failed, counted!.live], [{ count: 1, exact: true }, { count: 1, exact: true }], 'the run\'s children counted below their parent');
    const byChain = await inspector.search(child.chain!, { kinds: ['Order', 'Line'], namespaces: ['', namespace] });
    assert.deepEqual(byChain.map((h) => [h.by, h.step.key.path]), [['chain id', flaky.path]], 'a child found by its chain id');
    for (const text of [flaky.path, `/${flaky.path}`]) {
      const hits = await inspector.search(text, { kinds: ['Order', 'Line'], namespaces: ['', namespace] });
      assert.deepEqual(hits.map((h) => [h.by, h.step.key instanceof DocumentReference, h.step.key.path]), [['key', true, flaky.path]], `found by ${text}`);
    }
    const other = firestore.doc(`LockerNamespaces/${namespace}/Order/${fresh()}`);
    await locker.schedule(other, {}, '/second');
    await until(other, StepState.complete, 2);
    const inNamespace = await inspector.search(other.path, { kinds: ['Order'], namespaces: [''] });
    assert.deepEqual(inNamespace.map((h) => [h.step.key.path, h.step.namespace, h.step.keyPath]), [[other.path, namespace, other.path]], 'the path says its namespace');
    assert.deepEqual(await inspector.search(`Order:${JSON.stringify(parent.id)}`, { kinds: ['Order'], namespaces: [''] }), [], 'a Datastore key path is no document path');
    await assert.rejects(inspector.step(emulator.client().doc(parent.path)), { name: 'TypeError', message: /of another Firestore client/u });

    // The status page: a document's path finds it (one match: 303 to its page), and its pages and JSON write document paths.
    const found = await request(app).get('/ops/search').query({ q: flaky.path }).expect(303);
    const page = await request(app).get(`/ops/${String(found.headers.location).replace(/^\/ops\//u, '')}`).expect(200);
    assert.match(page.text, new RegExp(`<h2 class="key">${flaky.path}</h2>`));
    const json = await request(app).get('/ops/step.json').query({ key: child.encodedKey }).expect(200);
    assert.deepEqual([json.body.keyPath, json.body.parent.keyPath], [flaky.path, parent.path]);
    const parentPage = await request(app).get('/ops/step').query({ key: detail.encodedKey }).expect(200);
    assert.match(parentPage.text, new RegExp(`<code>${blocked.path}</code>, started`), 'the oldest pending child as a path');
    assert.match(parentPage.text, new RegExp(`<code>${flaky.path}</code> failed`), 'a failed child as a path');
    failing.delete(flaky.path);
    await locker.cancelFanOut(parent);
  });

  it('recurring() takes a DocumentReference, or a function of the tick that gives one; a run starts its chain on that document', async () => {
    const fixed = firestore.doc(`Payout/${fresh()}`);
    const perTick = firestore.doc(`LockerNamespaces/${namespace}/Payout/${fresh()}`);
    const daily = `payouts-${fresh()}`;
    const each = `each-${fresh()}`;
    locker.recurring(daily, { cron: '@daily', path: '/second', key: fixed });
    locker.recurring(each, { cron: '@daily', path: '/second', key: () => perTick });
    assert.throws(() => locker.recurring(`wrong-${fresh()}`, { cron: '@daily', path: '/second', key: emulator.client().doc('Payout/x') }), { name: 'TypeError', message: /of another Firestore client/u });
    await locker.tick(); // writes the declarations
    for (const [name, ref] of [[daily, fixed], [each, perTick]] as const) {
      assert.equal((await locker.runScheduleNow(name, 'now-1')).outcome, 'started');
      await until(ref, StepState.complete, 2);
    }
    // No local.idle(): the blocked children of the cases above still hold their requests. A run is
    // recorded before its step completes, and the step was awaited complete.
    for (const ref of [fixed, perTick]) assert.deepEqual(runs.filter((r) => r.path === ref.path).map((r) => [r.isDocument, r.seq]), [[true, 1]], ref.path);
    // The status page's schedules write each last run's entity as its document's path.
    const listed = await request(app).get('/ops/schedules.json').expect(200);
    const lastOf = (name: string): { keyPath?: string; encodedKey?: string } | undefined =>
      (listed.body.schedules as Array<{ name: string; last?: { keyPath?: string; encodedKey?: string } }>).find((x) => x.name === name)?.last;
    assert.equal(lastOf(daily)?.keyPath, fixed.path);
    assert.equal(lastOf(each)?.keyPath, perTick.path);
    const page = await request(app).get('/ops/schedules').expect(200);
    assert.match(page.text, new RegExp(`>${fixed.path}</a>`), 'the last run links to its document, written as its path');
    await request(app).get('/ops/step').query({ key: lastOf(daily)!.encodedKey! }).expect(200);
  });
});

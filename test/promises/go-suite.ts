/**
 * A rolling migration from the Go library: entities and tasks written exactly as the Go library
 * writes them (../shared/reference: `lock_ts`, `lock_req` = App Engine's request id, `lock_seq`,
 * `lock_try`, no other lock field; tasks POSTed with `X-Lock-Key` as the key's JSON form — the
 * encoded key in double quotes — `X-Lock-Seq`, App Engine's headers, and a form-encoded body of
 * the task's parameters). Run by go.*.test.ts against each store.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import request from 'supertest';
import { taskApp, keys, TEST_TOKEN, type TaskApp } from '../support/task-app';
import { RecordingQueue } from '../support/recording-queue';
import { ChainBusyError } from '../../src/errors/errors';
import { encodeKey } from '../../src/keys/key-codec';
import type { LockerOptions } from '../../src/config/options';
import { StepState, type Properties } from '../../src/types';
import type { StoreUnderTest } from '../step/handle-suite';

let counter = 0;
const MINUTE = 60_000;
/** What `appengine.RequestID(c)` looks like. */
const GO_REQUEST = '5f3a1c2b00ff0b6e2d9c41a7d90001737e676f2d6170700001310001';

export function goSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`migrating from the Go library on ${name}`, () => {
    let s: StoreUnderTest;
    before(async () => { s = await open(); });
    after(async () => { await s.close?.(); });

    const newKey = (): Key => keys.key({ namespace: s.namespace, path: ['Foo', `go${++counter}-${Date.now()}`] });
    /** The entity as Go's `storage.Put` leaves it: its own fields and the four lock fields (lock_req, lock_seq, lock_try unindexed). */
    const goPut = async (key: Key, lock: { ts: Date; req: string; seq: number; tries: number }): Promise<void> => {
      await s.store.transaction(async (tx) => {
        tx.put(key, { value: 'bar', count: 1, lock_ts: lock.ts, lock_req: lock.req, lock_seq: lock.seq, lock_try: lock.tries }, ['lock_req', 'lock_seq', 'lock_try']);
      });
    };
    const stored = async (key: Key): Promise<Properties> => {
      const props = await s.store.get(key);
      assert.ok(props, 'entity exists');
      return props;
    };
    /** A task as Go's `NewTask` + taskqueue.Add make it, delivered by App Engine. */
    const goTask = (t: TaskApp, key: Key, seq: number, params = '') =>
      request(t.app).post('/task').set('x-test-auth', TEST_TOKEN)
        .set('X-Lock-Key', `"${encodeKey(key, 's~go-app')}"`).set('X-Lock-Seq', String(seq))
        .set('X-AppEngine-QueueName', 'default').set('X-AppEngine-TaskName', '7270405372183216387')
        .set('X-AppEngine-TaskRetryCount', '0').set('X-AppEngine-TaskExecutionCount', '0')
        .set('Content-Type', 'application/x-www-form-urlencoded').send(params);
    const app = (options: Partial<LockerOptions> = {}): TaskApp => taskApp(s.store, { queue: new RecordingQueue(), ...options });

    it('runs a step Go scheduled, from a Go task: quoted key, App Engine headers, form-encoded parameters', async () => {
      const t = app();
      const key = newKey();
      await goPut(key, { ts: new Date(Date.now() - MINUTE), req: '', seq: 3, tries: 0 });
      let got: unknown;
      t.behave((ctx) => { got = { payload: ctx.payload, queue: ctx.task.queue, value: (ctx.entity as unknown as Properties).count }; ctx.entity.count = 2; });
      const res = await goTask(t, key, 3, 'id=42&note=hi');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(got, { payload: { id: '42', note: 'hi' }, queue: 'default', value: 1 });
      const after = await stored(key);
      assert.deepEqual([after.lock_seq, after.lock_state, after.lock_req, after.count, after.value], [4, StepState.complete, '', 2, 'bar']);
    });

    it("refuses a lease Go holds until Go's lease timeout (10 min 30 s) has passed, not leaseDuration", async () => {
      const t = app();
      const key = newKey();
      await goPut(key, { ts: new Date(Date.now() - 5 * MINUTE), req: GO_REQUEST, seq: 3, tries: 0 });
      const res = await goTask(t, key, 3);
      assert.equal(res.status, 503);
      assert.ok(Number(res.headers['retry-after']) >= 1);
      assert.equal(t.runs.length, 0, 'the live Go attempt is not overwritten');
      const after = await stored(key);
      assert.deepEqual([after.lock_req, after.lock_state, after.lock_try], [GO_REQUEST, undefined, 0], 'nothing written');
    });

    it("overwrites a Go lease once Go's lease timeout has passed, counted and alerted as an overwrite", async () => {
      const t = app();
      const key = newKey();
      await goPut(key, { ts: new Date(Date.now() - 11 * MINUTE), req: GO_REQUEST, seq: 3, tries: 0 });
      assert.equal((await goTask(t, key, 3)).status, 200);
      assert.equal(t.runs.length, 1);
      const after = await stored(key);
      assert.deepEqual([after.lock_seq, after.lock_state, after.lock_try], [4, StepState.complete, 0]);
      assert.equal(t.alerts.length, 1);
      assert.equal(t.alerts[0]!.reason, 'overwrite');
      assert.equal(t.alerts[0]!.previousAttempt, GO_REQUEST);
    });

    it('goLeaseTimeout sets the rule: a Go lease older than it is stale', async () => {
      const t = app({ goLeaseTimeout: 2 * MINUTE });
      const key = newKey();
      await goPut(key, { ts: new Date(Date.now() - 5 * MINUTE), req: GO_REQUEST, seq: 3, tries: 0 });
      assert.equal((await goTask(t, key, 3)).status, 200);
      assert.equal(t.runs.length, 1);
    });

    it('kicks off a new chain on an entity Go completed (Complete: lock_seq + 1, lock_req and lock_try cleared); a late Go task is dropped', async () => {
      const t = app();
      const key = newKey();
      await goPut(key, { ts: new Date(Date.now() - MINUTE), req: '', seq: 4, tries: 0 });
      const step = await t.locker.schedule(key, { count: 5 }, '/task');
      assert.equal(step.seq, 5);
      const after = await stored(key);
      assert.deepEqual([after.lock_seq, after.lock_state, after.count, after.value], [5, StepState.scheduled, 5, 'bar']);
      assert.equal(typeof after.lock_chain, 'string');
      assert.equal((await goTask(t, key, 3)).status, 200);
      assert.equal(t.runs.length, 0, 'the duplicate of a step Go finished is dropped');
    });

    it('refuses to kick off while Go holds the lease', async () => {
      const t = app();
      const key = newKey();
      await goPut(key, { ts: new Date(), req: GO_REQUEST, seq: 4, tries: 0 });
      await assert.rejects(t.locker.schedule(key, { count: 5 }, '/task'), ChainBusyError);
      assert.equal((await stored(key)).lock_req, GO_REQUEST);
    });
  });
}

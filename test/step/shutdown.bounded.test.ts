// shutdown() within its time as a whole, the sweep route while stopping, alertTimeout against
// leaseDuration, and a step's time limit counted from the request's arrival (issue 26, the smaller
// ones). On the in-memory store; the faults are a store wrapper whose sweep query hangs, an
// alerter that never answers, and an authenticator that holds the request.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { MemoryStore } from '../../src/store/memory/store';
import { Locker } from '../../src/locker';
import { ConfigError, RequestTimeoutError } from '../../src/errors/errors';
import { KeptTasks } from '../support/kept-tasks';
import { Counter, keys, MemoryLogger, taskApp, TEST_TOKEN } from '../support/task-app';
import type { Store } from '../../src/types';

/** `store` with a sweep query that waits until `release()`; `started` resolves once one began. */
function hangingSweeps(store: Store): { store: Store; started: Promise<void>; release: () => void } {
  let release!: () => void;
  let began!: () => void;
  const gate = new Promise<void>((resolve) => { release = resolve; });
  const started = new Promise<void>((resolve) => { began = resolve; });
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'listDue') {
        return async (...args: Parameters<Store['listDue']>) => { began(); await gate; return target.listDue(...args); };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, started, release };
}

describe('shutdown() within its time, in all', () => {
  it('ends within timeoutMs while a sweep hangs on an alert that never answers; the alert stays owed', { timeout: 60_000 }, async () => {
    let now = Date.parse('2033-01-02T03:04:05.000Z');
    let mode: 'down' | 'hang' = 'down';
    const store = new MemoryStore();
    const t = taskApp(store, {
      queue: new KeptTasks(), clock: () => now, leaseDuration: 30_000, stallAfter: 30_000, maxRetries: 1, alertTimeout: 10_000,
      alerter: () => (mode === 'down' ? Promise.reject(new Error('down')) : new Promise<void>(() => undefined)),
    });
    const key = keys.key({ path: ['Counter', 'hung'] });
    await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
    t.behave(() => { throw new Error('declined'); });
    assert.equal((await t.send(key, 1)).status, 200); // failed for good; its alert could not be sent
    mode = 'hang';
    now += 60_000;
    let swept = false;
    const sweeping = t.locker.sweep().then((r) => { swept = true; return r; }); // sends the owed alert again: it hangs for alertTimeout
    await new Promise((resolve) => setImmediate(resolve));
    await t.locker.shutdown({ timeoutMs: 300 }); // without the bound this waits for the sweep and its alert (10 s)
    assert.equal(swept, false, 'shutdown() returned while the sweep and its alert were still in flight');
    assert.ok(t.logger.has('shutdown: time is up'));
    const props = (await store.get(key))!;
    assert.ok(Array.isArray(props.lock_alerts) && props.lock_alerts.some((m) => typeof m === 'string' && m.startsWith('failure:1:') && !m.endsWith(':sent')), 'the alert is still owed on the entity');
    void sweeping; // its alert never answers; its timeout timer does not hold the process
  });

  it('answers the sweep route 503 once stopping, without sweeping', async () => {
    const hang = hangingSweeps(new MemoryStore());
    let swept = false;
    void hang.started.then(() => { swept = true; });
    const locker = new Locker({ store: hang.store, queue: new KeptTasks(), authenticate: false, logger: new MemoryLogger() });
    const app = express();
    app.post('/sweep', locker.sweepHandler());
    await locker.shutdown({ timeoutMs: 100 });
    const res = await request(app).post('/sweep');
    assert.equal(res.status, 503);
    assert.equal(res.headers.connection, 'close');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(swept, false, 'no sweep query ran');
    hang.release();
  });
});

describe('alertTimeout against leaseDuration', () => {
  const base = { store: new MemoryStore(), authenticate: false as const, logger: new MemoryLogger(), alerter: () => undefined };
  it('refuses an alertTimeout over a third of leaseDuration: a hanging alerter could let the lease go stale', () => {
    assert.throws(() => new Locker({ ...base, leaseDuration: 10_000, alertTimeout: 5_000 }), (e: Error) => e instanceof ConfigError && /a third of leaseDuration/.test(e.message));
    assert.equal(new Locker({ ...base, leaseDuration: 15_000, alertTimeout: 5_000 }).config.alertTimeout, 5_000);
  });
  it('defaults alertTimeout to 5 s, or a third of a shorter lease', () => {
    assert.equal(new Locker({ ...base, leaseDuration: 60_000 }).config.alertTimeout, 5_000);
    assert.equal(new Locker({ ...base, leaseDuration: 3_000 }).config.alertTimeout, 1_000);
  });
});

describe("a step's time limit counts from the request's arrival", () => {
  it('stops a handler whose request spent its time before the lease was taken', { timeout: 30_000 }, async () => {
    const store = new MemoryStore();
    let heldMs = 0;
    // requestTimeout 3 s: the margin is 1 s, the step is stopped 2 s after the request arrived.
    const t = taskApp(store, {
      queue: new KeptTasks(), requestTimeout: 3_000, leaseTimeout: 60_000,
      authenticate: async (req) => {
        const at = performance.now();
        await new Promise((resolve) => setTimeout(resolve, 1_800)); // a slow front: 1.8 s of the 2 s gone
        heldMs = performance.now() - at;
        return req.headers['x-test-auth'] === TEST_TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no token' };
      },
    });
    const key = keys.key({ path: ['Counter', 'late'] });
    await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
    let ranMs = -1;
    let reason: unknown;
    t.behave(async (ctx) => {
      const at = performance.now();
      if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      ranMs = performance.now() - at;
      reason = ctx.signal.reason;
      throw ctx.signal.reason;
    });
    const res = await t.send(key, 1);
    assert.ok(heldMs >= 1_800);
    assert.equal(res.status, 503, res.text);
    assert.ok(reason instanceof RequestTimeoutError);
    // From the lease's start the handler would have had the whole 2 s; from the arrival it had what was left.
    assert.ok(ranMs < 1_000, `stopped ${Math.round(ranMs)} ms into its run, less than half the step's limit`);
    await t.locker.shutdown();
  });
});

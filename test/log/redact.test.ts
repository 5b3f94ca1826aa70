// The Locker's `redact` reaches every output: a property `password: 'hunter2secret'` (top level and
// nested) is shown as [redacted] on the status page and its JSON, and its value is scrubbed from the
// error a handler throws wherever that error is told: the page (message and stack), the log lines,
// the `released` and `failed` events, and the alert every alerter gets.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { ConfigError, PermanentError } from '../../src/errors/errors';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState, type AlertEvent, type Authenticator } from '../../src/types';
import { MemoryLogger, testAuth, TEST_TOKEN } from '../support/task-app';

const SECRET = 'hunter2secret';
const OPERATOR = 'Bearer operator';
const operator: Authenticator = (req) => (req.headers.authorization === OPERATOR ? { ok: true } : { ok: false, status: 401, reason: 'no' });

describe('redact: one Locker setting, honoured by every output', () => {
  it('keeps the value out of the page, its JSON, the logs, the events and the alerts', async () => {
    const store = new MemoryStore({ projectId: 'shop' });
    const logger = new MemoryLogger();
    const alerts: AlertEvent[] = [];
    const locker = new Locker({ store, authenticate: testAuth, logger, maxRetries: 2, redact: ['password'], alerter: (e) => { alerts.push(e); } });
    const told: unknown[] = [];
    locker.on('released', (e) => { told.push(e.error); });
    locker.on('failed', (e) => { told.push(e.error); });
    let attempt = 0;
    const app = express();
    app.post('/task', locker.handle<{ password: string }>((ctx) => {
      attempt++;
      const message = `cannot log in as ann with ${ctx.entity.password}`;
      throw attempt === 1 ? new Error(message) : new PermanentError(message);
    }, (p) => p as { password: string }));
    app.use('/ops', locker.statusRouter({ authenticate: operator, kinds: ['Account'] }));
    const key = new Key({ path: ['Account', 'ann'] });
    await store.transaction(async (tx) => tx.put(key, {
      user: 'ann', password: SECRET, nested: { password: SECRET, note: 'kept' },
      lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled,
    }, UNINDEXED_LOCK_FIELDS));
    const send = () => request(app).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-key', locker.encodeKey(key)).set('x-lock-seq', '1');
    assert.equal((await send()).status, 500, 'released for a retry');
    assert.equal((await send()).status, 200, 'failed for good');
    await locker.shutdown();

    // Events: the error keeps its class, loses the secret.
    assert.equal(told.length, 2);
    assert.ok(told[0] instanceof Error && told[1] instanceof PermanentError, 'the same classes');
    for (const error of told as Error[]) {
      assert.equal(error.message, 'cannot log in as ann with [redacted]');
      assert.ok(!String(error.stack).includes(SECRET), 'not in the stack');
    }
    // Logs.
    assert.ok(logger.lines.some((l) => l.message === 'step failed for good'));
    assert.ok(!JSON.stringify(logger.lines).includes(SECRET), 'no log line carries it');
    // The alert.
    assert.equal(alerts.length, 1);
    assert.equal(alerts[0]!.properties.password, '[redacted]');
    assert.deepEqual(alerts[0]!.properties.nested, { password: '[redacted]', note: 'kept' });
    assert.ok(!JSON.stringify(alerts[0]).includes(SECRET), 'the alert carries it nowhere (message, stack, properties)');
    // The page and its JSON, list and detail; locker.inspect() as well.
    const encoded = encodeURIComponent(locker.encodeKey(key));
    for (const path of ['/ops/', '/ops/steps.json', `/ops/step?key=${encoded}`, `/ops/step.json?key=${encoded}`]) {
      const res = await request(app).get(path).set('authorization', OPERATOR);
      assert.equal(res.status, 200, path);
      assert.ok(res.text.includes('ann'), `${path} shows the step`);
      assert.ok(res.text.includes('[redacted]'), `${path} marks what it left out`);
      assert.ok(!res.text.includes(SECRET), `${path} does not show it`);
    }
    const detail = await locker.inspect().step(key);
    assert.equal(detail?.properties.password, '[redacted]');
    assert.match(detail?.error?.message ?? '', /cannot log in as ann with \[redacted\]/);
    // It is stored as it was: redaction is about what is shown.
    assert.equal((await store.read(key))?.properties.password, SECRET);
  });

  it('takes a function, and refuses anything else', () => {
    const store = new MemoryStore();
    assert.doesNotThrow(() => new Locker({ store, authenticate: false, redact: (name, value) => (name === 'pin' ? '****' : value) }));
    for (const bad of ['password', [1], {}] as unknown[]) {
      assert.throws(() => new Locker({ store, authenticate: false, redact: bad as string[] }), (e: unknown) => e instanceof ConfigError && /redact must be/.test(e.message));
    }
  });
});

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
import { MAX_ERROR_LENGTH, UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { formatAlert } from '../../src/alert/message';
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

  it('leaves no part of a secret where an error is cut: the stored text at 8 KiB, the list\'s first line at 299 characters', async () => {
    // A 33-character token, in an error whose first line is cut for the list just after the token's
    // 27th character, and whose stored text (8 KiB) is cut just after the 27th character of its
    // second occurrence: 27 characters showed on steps.json and step.json before scrubbing came first.
    const token = 'tok9QzX4vLm2Wp7Rk3Ns8Jd5Hf6Gb1Ya0';
    assert.equal(token.length, 33);
    const store = new MemoryStore({ projectId: 'shop' });
    const logger = new MemoryLogger();
    const alerts: AlertEvent[] = [];
    const locker = new Locker({ store, authenticate: testAuth, logger, maxRetries: 1, redact: ['apiToken'], alerter: (e) => { alerts.push(e); } });
    const told: unknown[] = [];
    locker.on('failed', (e) => { told.push(e.error); });
    const head = String(new PermanentError('§').stack).split('§')[0]!; // what the stored text starts with, before the message
    const firstCut = 299;
    const storedCut = MAX_ERROR_LENGTH - 14; // the stored text keeps about this much, then says it was cut
    const message = 'a'.repeat(firstCut - 27 - head.length) + token + 'b'.repeat(storedCut - 27 - head.length - (firstCut - 27 - head.length) - token.length) + token + 'c'.repeat(100);
    assert.equal((head + message).indexOf(token), firstCut - 27, 'the first occurrence straddles the list\'s cut');
    assert.equal((head + message).lastIndexOf(token), storedCut - 27, 'the second straddles the stored cut');
    const app = express();
    app.post('/task', locker.handle(() => { throw new PermanentError(message); }, (p) => p));
    app.use('/ops', locker.statusRouter({ authenticate: operator, kinds: ['Account'] }));
    const key = new Key({ path: ['Account', 'bob'] });
    await store.transaction(async (tx) => tx.put(key, {
      user: 'bob', apiToken: token,
      lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled,
    }, UNINDEXED_LOCK_FIELDS));
    const res = await request(app).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-key', locker.encodeKey(key)).set('x-lock-seq', '1');
    assert.equal(res.status, 200, 'failed for good');
    await locker.shutdown();
    const stored = String((await store.read(key))?.properties.lock_err);
    assert.ok(stored.endsWith('(truncated)') && stored.includes(token.slice(0, 27)) && stored.split(token).length === 2, 'the stored text, kept as it was, was cut through the second token');

    const encoded = encodeURIComponent(locker.encodeKey(key));
    const outputs: Array<[string, string]> = [];
    for (const path of ['/ops/', '/ops/steps.json', `/ops/step?key=${encoded}`, `/ops/step.json?key=${encoded}`]) {
      const page = await request(app).get(path).set('authorization', OPERATOR);
      assert.equal(page.status, 200, path);
      outputs.push([path, page.text]);
    }
    const listed = await locker.inspect().list({ kind: 'Account', state: 'failed' });
    assert.equal(listed.steps.length, 1);
    assert.ok(listed.steps[0]!.errorMessage!.length <= 300 && listed.steps[0]!.errorMessage!.endsWith('…'), 'the list shows the first line, cut');
    outputs.push(['inspect().list()', JSON.stringify(listed)]);
    outputs.push(['inspect().step()', JSON.stringify(await locker.inspect().step(key))]);
    assert.equal(alerts.length, 1);
    outputs.push(['the alert', JSON.stringify(alerts[0])]);
    const mail = formatAlert(alerts[0]!, { subjectPrefix: '[locker]' });
    outputs.push(['the email', `${mail.subject}\n${mail.text}\n${mail.html}`]);
    outputs.push(['the events', told.map((e) => (e instanceof Error ? `${e.message}\n${e.stack}` : String(e))).join('\n')]);
    outputs.push(['the logs', JSON.stringify(logger.lines)]);
    const leaks = outputs.map(([where, text]) => [where, longestPart(text, token)] as const).filter(([, shown]) => shown >= 8);
    assert.deepEqual(leaks, [], 'no output shows 8 characters of the token in a row (output, characters shown)');
  });

  it('takes a function, and refuses anything else', () => {
    const store = new MemoryStore();
    assert.doesNotThrow(() => new Locker({ store, authenticate: false, redact: (name, value) => (name === 'pin' ? '****' : value) }));
    for (const bad of ['password', [1], {}] as unknown[]) {
      assert.throws(() => new Locker({ store, authenticate: false, redact: bad as string[] }), (e: unknown) => e instanceof ConfigError && /redact must be/.test(e.message));
    }
  });
});

/** The longest run of `secret`'s characters (a substring of it) that `text` contains. */
function longestPart(text: string, secret: string): number {
  for (let n = secret.length; n > 0; n--) {
    for (let at = 0; at + n <= secret.length; at++) if (text.includes(secret.slice(at, at + n))) return n;
  }
  return 0;
}

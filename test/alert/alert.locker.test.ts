// Alerts from a running Locker: real SMTP on loopback, the Datastore emulator, two Locker
// instances sharing it. One alert per overwrite and one per failed step, each under a stable id;
// a broken mail server never changes a task's answer or what is stored.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { EmailAlerter } from '../../src/alert/email';
import { DatastoreStore } from '../../src/store/datastore/store';
import { MAX_ERROR_LENGTH } from '../../src/rules/lock-fields';
import { StepState, type Properties, type Store } from '../../src/types';
import { legacyDatastore, uniqueNamespace, closedPort } from '../support/emulator';
import { TestSmtpServer } from '../support/smtp';
import { keys, taskApp, type TaskApp } from '../support/task-app';
import { keyPath as keyPathOf } from '../../src/keys/key-codec';
import { alertId } from '../../src/alert/event';
import { AlertReason } from '../../src/types';

describe('alerts from the Locker', () => {
  let smtp: TestSmtpServer;
  const namespace = uniqueNamespace('alerts');
  const storeA = new DatastoreStore(legacyDatastore());
  const storeB = new DatastoreStore(legacyDatastore());
  let n = 0;
  const newKey = (): Key => keys.key({ namespace, path: ['Order', `o${++n}`] });
  const seed = (store: Store, key: Key, props: Properties) => store.transaction(async (tx) => { tx.put(key, props, []); });
  const stale = (over: Properties = {}): Properties => ({
    total: 12, lock_ts: new Date(Date.now() - 10 * 60_000), lock_req: 'crashed-attempt', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled, ...over,
  });
  const emailApp = (store: Store, transport: object, extra: Parameters<typeof taskApp>[1] = {}): TaskApp => taskApp(store, {
    alerter: new EmailAlerter({ transport, to: ['ops@example.com', 'oncall@example.com'], from: 'locker@example.com', rateLimit: { max: 100, perMs: 60_000 } }),
    alertTimeout: 1_000,
    ...extra,
  });

  before(async () => { smtp = await TestSmtpServer.start(); });
  after(async () => { await smtp.stop(); });

  it('emails a permanent failure with the facts a person needs', async () => {
    smtp.mode = 'accept';
    const before = smtp.messages.length;
    const t = emailApp(storeA, smtp.transportOptions(), { maxRetries: 1 });
    const key = newKey();
    await seed(storeA, key, stale({ lock_req: '', lock_ts: new Date() }));
    t.behave(() => { throw new Error('payment gateway said no'); });
    const res = await t.send(key, 1, undefined, { 'x-cloudtasks-taskname': 'charge-1', 'x-cloudtasks-queuename': 'orders' });
    assert.equal(res.status, 200);
    const mails = smtp.messages.slice(before);
    assert.equal(mails.length, 1);
    const mail = mails[0]!;
    assert.deepEqual(mail.envelope.to.sort(), ['oncall@example.com', 'ops@example.com']);
    assert.match(mail.subject, /failed/i);
    assert.match(mail.subject, new RegExp(`Order:"${key.name}"`));
    for (const fact of ['payment gateway said no', 'charge-1', 'orders', namespace, t.runs[0]!.attempt, '12']) {
      assert.ok(mail.text.includes(fact), `text mentions ${fact}`);
    }
    await t.locker.shutdown();
  });

  it('names the project and service and links to the step on the configured status page', async () => {
    smtp.mode = 'accept';
    const before = smtp.messages.length;
    const t = emailApp(storeA, smtp.transportOptions(), {
      maxRetries: 1, statusUrl: 'https://orders.example.com/ops/locker/', project: 'shop-prod', service: 'orders (orders-00042)',
    });
    const key = newKey();
    await seed(storeA, key, stale({ lock_req: '', lock_ts: new Date() }));
    t.behave(() => { throw new Error('card declined'); });
    assert.equal((await t.send(key, 1)).status, 200);
    await t.locker.shutdown();
    const mail = smtp.messages.slice(before)[0]!;
    const encoded = t.locker.encodeKey(key);
    const url = `https://orders.example.com/ops/locker/step?key=${encodeURIComponent(encoded)}`;
    assert.match(mail.text, /^ {2}project: +shop-prod$/m);
    assert.match(mail.text, /^ {2}service: +orders \(orders-00042\)$/m);
    assert.ok(mail.text.includes(`The step: ${url}`));
    assert.ok(mail.html.includes(`href="${url}"`));
    assert.ok(mail.text.includes(`locker.retry(locker.decodeKey('${encoded}'))`));
    assert.equal(keyPathOf(t.locker.decodeKey(encoded)), keyPathOf(key), 'the key in the message decodes to the step\'s key');
  });

  const messageIdOf = (raw: string): string | undefined => /^Message-ID: *<([^@>]+)@/im.exec(raw)?.[1];

  /** Two instances; A takes over a stale lease on a new key and its handler fails (500): A's overwrite alert is claimed and sent. */
  async function overwrittenByA() {
    smtp.mode = 'accept';
    const before = smtp.messages.length;
    const a = emailApp(storeA, smtp.transportOptions(), { maxRetries: 10 });
    const b = emailApp(storeB, smtp.transportOptions(), { maxRetries: 10 });
    const key = newKey();
    await seed(storeA, key, stale());
    a.behave(() => { throw new Error('crash'); });
    assert.equal((await a.send(key, 1)).status, 500);
    return { before, a, b, key, attemptA: a.runs[0]!.attempt, current: (await storeA.get(key))! };
  }

  it('alerts every overwrite of a step, each under its own id, also across two instances', async () => {
    // instance A takes over the stale lease; its handler fails
    const { before, a, b, key, attemptA, current } = await overwrittenByA();
    assert.deepEqual(current.lock_alerts, [`overwrite:1:crashed-attempt:${attemptA}:sent`], 'the overwrite is recorded on the entity, naming both attempts, and marked sent by the release');
    // then another attempt holds the lease and dies without releasing it: B takes it over
    await seed(storeA, key, { ...current, lock_req: 'a-died', lock_ts: new Date(Date.now() - 10 * 60_000) });
    const res = await b.send(key, 1);
    assert.equal(res.status, 200);
    assert.equal(b.events.filter((e) => e.name === 'overwritten').length, 1);
    assert.equal(a.events.filter((e) => e.name === 'overwritten').length, 1);
    await Promise.all([a.locker.shutdown(), b.locker.shutdown()]);
    const overwrites = smtp.messages.slice(before).filter((m) => /overwritten/i.test(m.subject));
    assert.equal(overwrites.length, 2, 'two overwrites, two alerts');
    assert.deepEqual(new Set(overwrites.map((m) => messageIdOf(m.raw))), new Set([
      alertId(AlertReason.overwrite, key, 1, 'crashed-attempt'), alertId(AlertReason.overwrite, key, 1, 'a-died'),
    ]));
    assert.ok(overwrites.some((m) => m.text.includes('a-died') && m.text.includes(b.runs[0]!.attempt)));
  });

  it('sends, under its own id, every overwrite alert a holder left unmarked (it may have died before sending), and never one marked sent', async () => {
    const { before, a, b, key, attemptA, current } = await overwrittenByA();
    // A sent its alert and marked it; now it is as if A had died holding the lease it took over
    await seed(storeA, key, { ...current, lock_req: attemptA, lock_ts: new Date(Date.now() - 10 * 60_000) });
    // and an attempt X that took a lease over from Y and died before it could send anything, after Y
    // had taken it from P:Q (a Go request id may hold a colon) and died too, and V's overwrite by U was never marked either
    const other = newKey();
    await seed(storeA, other, stale({ lock_req: 'X', lock_try: 3, lock_alerts: ['overwrite:1:V:U', 'overwrite:1:P:Q:Y', 'overwrite:1:Y:X', 'overwrite:1:S:T:sent'] }));
    assert.equal((await b.send(key, 1)).status, 200);
    assert.equal((await b.send(other, 1)).status, 200);
    await Promise.all([a.locker.shutdown(), b.locker.shutdown()]);
    const ids = smtp.messages.slice(before).filter((m) => /overwritten/i.test(m.subject)).map((m) => messageIdOf(m.raw));
    const count = (k: typeof key, previous: string): number => ids.filter((id) => id === alertId(AlertReason.overwrite, k, 1, previous)).length;
    assert.equal(count(key, 'crashed-attempt'), 1, 'A\'s alert, marked sent by A, is not sent again');
    assert.equal(count(key, attemptA), 1, 'B\'s own overwrite of A');
    assert.equal(count(other, 'Y'), 1, 'X\'s unsent alert (Y by X), sent by B');
    assert.equal(count(other, 'P:Q'), 1, 'the takeover before it (P:Q by Y), sent by B');
    assert.equal(count(other, 'V'), 1, 'any other unmarked overwrite of the step, sent by B');
    assert.equal(count(other, 'S'), 0, 'not one marked sent');
    assert.equal(count(other, 'X'), 1, 'B\'s own overwrite of X');
    assert.equal(ids.length, 6);
    const finished = (await storeA.get(other))!;
    assert.equal(finished.lock_seq, 2, 'the step ran and finished');
    assert.equal(finished.lock_alerts, undefined, 'its finishing write owes no alert: every one was sent before it');
  });

  it('sends one alert when two instances race to overwrite the same stale lease', async () => {
    smtp.mode = 'accept';
    const before = smtp.messages.length;
    const a = emailApp(storeA, smtp.transportOptions());
    const b = emailApp(storeB, smtp.transportOptions());
    const key = newKey();
    await seed(storeA, key, stale());
    const answers = await Promise.all([a.send(key, 1), b.send(key, 1), a.send(key, 1), b.send(key, 1)]);
    assert.equal(a.runs.length + b.runs.length, 1, `answers ${answers.map((x) => x.status)}`);
    await Promise.all([a.locker.shutdown(), b.locker.shutdown()]);
    assert.equal(smtp.messages.slice(before).length, 1);
  });

  describe('a mail server that is down or hangs changes nothing', () => {
    /** Runs the same scenario (a stale lease overwritten, then a failure at maxRetries) and returns what it observed. */
    async function scenario(transport: object | undefined): Promise<{ statuses: number[]; stored: Properties; runs: number }> {
      const t = transport ? emailApp(storeA, transport, { maxRetries: 2, alertTimeout: 500 }) : taskApp(storeA, { maxRetries: 2, alerter: undefined });
      const key = newKey();
      await seed(storeA, key, stale());
      t.behave(() => { throw new Error('always fails'); });
      const statuses = [(await t.send(key, 1)).status, (await t.send(key, 1)).status, (await t.send(key, 1)).status];
      await t.locker.shutdown();
      const stored = (await storeA.get(key))!;
      const { lock_ts: _ts, lock_err: err, lock_alerts: _alerts, lock_hist: hist, ...rest } = stored;
      // The history's entries carry when each attempt began and how long it took: the rest of each must match.
      const history = String(hist).split('\n').map((entry) => entry.split(' ').filter((_, i) => i !== 2 && i !== 3).join(' '));
      return { statuses, stored: { ...rest, lock_hist_without_times: history, lock_err_first_line: String(err).split('\n')[0] }, runs: t.runs.length };
    }

    it('answers and stores exactly as with a working server, or with no alerts at all', async () => {
      smtp.mode = 'accept';
      const working = await scenario(smtp.transportOptions());
      const none = await scenario(undefined);
      const down = await scenario({ host: '127.0.0.1', port: await closedPort(), secure: false, ignoreTLS: true, connectionTimeout: 300 });
      const hanging = await TestSmtpServer.start('hang-greeting');
      try {
        const hung = await scenario(hanging.transportOptions({ greetingTimeout: 10_000, connectionTimeout: 10_000 }));
        for (const [name, seen] of [['no alerter', none], ['server down', down], ['server hangs', hung]] as const) {
          assert.deepEqual(seen, working, name);
        }
      } finally {
        await hanging.stop();
      }
      // overwrite of the stale lease (try 1), the handler throws (try 2 = maxRetries): failed; then duplicates
      assert.deepEqual(working.statuses, [200, 200, 200]);
      assert.equal(working.runs, 1);
      assert.equal(working.stored.lock_state, StepState.failed);
    });

    it('logs the failed send with its cause', async () => {
      const t = emailApp(storeA, { host: '127.0.0.1', port: await closedPort(), secure: false, ignoreTLS: true, connectionTimeout: 300 }, { maxRetries: 1 });
      const key = newKey();
      await seed(storeA, key, stale({ lock_req: '', lock_ts: new Date() }));
      t.behave(() => { throw new Error('nope'); });
      assert.equal((await t.send(key, 1)).status, 200);
      await t.locker.shutdown();
      const line = t.logger.lines.find((l) => l.message === 'alert could not be sent');
      assert.ok(line, 'logged');
      assert.match(String(line.fields?.cause), /ECONNREFUSED|connect/i);
    });
  });

  it('stores the last error with the failure, bounded in size', async () => {
    const t = taskApp(storeA, { maxRetries: 1 });
    const key = newKey();
    await seed(storeA, key, stale({ lock_req: '', lock_ts: new Date() }));
    t.behave(() => { throw new Error(`huge ${'x'.repeat(100_000)}`); });
    assert.equal((await t.send(key, 1)).status, 200);
    const stored = (await storeA.get(key))!;
    assert.equal(stored.lock_state, StepState.failed);
    assert.ok(String(stored.lock_err).startsWith('Error: huge xxx'));
    assert.ok(String(stored.lock_err).length <= MAX_ERROR_LENGTH);
  });
});

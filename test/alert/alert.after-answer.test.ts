// Nothing owed after the answer: an alert whose send had not finished when the instance answered
// (its mail server holds the message longer than `alertTimeout`) still reaches someone after the
// instance is frozen (SIGSTOP, as Cloud Run does to an instance with no request in flight) and
// scaled in (SIGKILL): another instance's sweep sends it, under the same id. And the usual cases
// cost nothing: an overwrite alert the alerter took is marked sent by the step's own last write
// (the sweep sends nothing more), and a step without a takeover makes no extra store call.
// On the Datastore emulator, with real SMTP servers on loopback.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Key } from '@google-cloud/datastore';
import { alertId } from '../../src/alert/event';
import { EmailAlerter } from '../../src/alert/email';
import { DatastoreStore } from '../../src/store/datastore/store';
import { AlertReason, StepState, type AlertEvent, type TaskRequest } from '../../src/types';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { spyClient } from '../support/datastore-spy';
import { KeptTasks, deliver } from '../support/kept-tasks';
import { TestSmtpServer } from '../support/smtp';
import { Counter, keys, taskApp, TEST_TOKEN, type TaskApp } from '../support/task-app';

const ROOT = path.resolve(__dirname, '..', '..');
const MIN = 60_000;
const ALERT_TIMEOUT_MS = 400;

const messageIdOf = (raw: string): string | undefined => /^Message-ID: *<([^@>]+)@/im.exec(raw)?.[1];

/** Instance A: a child process serving `/task` (see support/alerting-app.ts). */
interface Instance { child: ChildProcess; url: string; out: string[]; exited: Promise<unknown> }

async function startInstance(env: Record<string, string>): Promise<Instance> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/alerting-app.ts'], {
    cwd: ROOT, env: { ...process.env, ALERT_TIMEOUT_MS: String(ALERT_TIMEOUT_MS), ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (c: string) => out.push(c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => out.push(c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    const look = (): void => {
      const m = /alerting-app listening on (\S+)/.exec(out.join(''));
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', look);
    child.once('exit', (code) => reject(new Error(`instance A exited (${String(code)}) before serving:\n${out.join('')}`)));
  });
  return { child, url, out, exited };
}

/** Delivers `task` to instance A as Cloud Tasks would; resolves to the status. */
async function deliverTo(a: Instance, task: TaskRequest): Promise<number> {
  const res = await fetch(`${a.url}${task.path}`, {
    method: 'POST', headers: { ...task.headers, 'x-test-auth': TEST_TOKEN, 'content-type': 'application/json' }, body: task.body,
  });
  await res.text();
  return res.status;
}

/** Freezes A (no CPU after its answer), then scales it in. */
async function freezeAndKill(a: Instance): Promise<void> {
  process.kill(a.child.pid!, 'SIGSTOP');
  process.kill(a.child.pid!, 'SIGKILL');
  await a.exited;
}

describe('alerts: nothing owed after the answer', () => {
  const datastore = legacyDatastore();
  let holding: TestSmtpServer; // A's mail server: takes the message and never answers
  let accepting: TestSmtpServer; // B's
  before(async () => { [holding, accepting] = await Promise.all([TestSmtpServer.start('hang-data'), TestSmtpServer.start('accept')]); });
  after(async () => { await Promise.all([holding.stop(), accepting.stop()]); });

  /**
   * Instance B, in this process, on the same emulator and namespace; its clock is `ahead` ms in
   * front of the real one once `jump()` is called (so its sweep runs after the grace without the
   * test waiting for it).
   */
  function instanceB(namespace: string) {
    let ahead = 0;
    const queue = new KeptTasks();
    const t = taskApp(new DatastoreStore(datastore, { namespaces: [namespace] }), {
      queue, leaseDuration: 15_000, stallAfter: 20_000, alertTimeout: 5_000, clock: () => Date.now() + ahead,
      alerter: new EmailAlerter({ transport: accepting.transportOptions(), to: 'ops@example.com', from: 'locker@example.com', rateLimit: { max: 100, perMs: MIN } }),
    });
    return { t, queue, jump: (ms: number) => { ahead = ms; } };
  }

  /** Kicks off a chain on a new key from B; returns the key and its kept task. */
  async function kickoff(b: ReturnType<typeof instanceB>, namespace: string): Promise<{ key: Key; task: TaskRequest }> {
    const key = keys.key({ namespace, path: ['Order', `o-${Math.random().toString(36).slice(2, 8)}`] });
    await b.t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
    return { key, task: b.queue.last() };
  }

  /** Makes the step's lease look held by an attempt that died 10 minutes ago. */
  async function staleLease(key: Key): Promise<void> {
    const store = new DatastoreStore(datastore);
    const props = (await store.get(key))!;
    await store.transaction(async (tx) => { tx.put(key, { ...props, lock_req: 'crashed-attempt', lock_ts: new Date(Date.now() - 10 * MIN) }, []); });
  }

  it('an overwrite alert still in flight at the answer reaches the alerter from another instance, under the same id', async () => {
    const namespace = uniqueNamespace('after-answer');
    const b = instanceB(namespace);
    const { key, task } = await kickoff(b, namespace);
    await staleLease(key);
    const a = await startInstance({ NAMESPACE: namespace, SMTP_PORT: String(holding.port), HANDLER: 'complete', LEASE_MS: '10000' });
    try {
      assert.equal(await deliverTo(a, task), 200, a.out.join(''));
    } finally {
      await freezeAndKill(a);
    }
    assert.match(a.out.join(''), /alert could not be sent/, 'A answered before its mail server took the alert');
    assert.equal(holding.messages.length, 0);
    const stored = (await new DatastoreStore(datastore).get(key))!;
    assert.equal(stored.lock_state, StepState.complete, 'A finished the step');
    assert.deepEqual((stored.lock_alerts as string[]).filter((m) => m.startsWith('overwrite:1:crashed-attempt:')).length, 1, 'its claim is kept past the step, unmarked');

    const mailsBefore = accepting.messages.length;
    b.jump(10 * MIN);
    const swept = await b.t.locker.sweep();
    assert.equal(swept.alerted, 1, JSON.stringify(swept));
    const mails = accepting.messages.slice(mailsBefore);
    assert.equal(mails.length, 1);
    assert.match(mails[0]!.subject, /overwritten/i);
    assert.equal(messageIdOf(mails[0]!.raw), alertId(AlertReason.overwrite, key, 1, 'crashed-attempt'), 'the id of the first send');
    assert.equal((await new DatastoreStore(datastore).get(key))!.lock_alerts, undefined, 'marked sent: nothing owed any more');
    const again = await b.t.locker.sweep();
    assert.equal(again.alerted, 0, 'sent once by the sweep');
    assert.equal(accepting.messages.length, mailsBefore + 1);
    await b.t.locker.shutdown();
  });

  it('a failure alert still in flight at the answer reaches the alerter from another instance, under the same id', async () => {
    const namespace = uniqueNamespace('after-answer');
    const b = instanceB(namespace);
    const { key, task } = await kickoff(b, namespace);
    const a = await startInstance({ NAMESPACE: namespace, SMTP_PORT: String(holding.port), HANDLER: 'fail' });
    let attempt = '';
    try {
      assert.equal(await deliverTo(a, task), 200, a.out.join(''));
    } finally {
      await freezeAndKill(a);
    }
    const stored = (await new DatastoreStore(datastore).get(key))!;
    assert.equal(stored.lock_state, StepState.failed);
    const claim = (stored.lock_alerts as string[])[0]!;
    assert.match(claim, /^failure:1:[^:]+$/, 'claimed, not marked sent');
    attempt = claim.split(':')[2]!;

    const mailsBefore = accepting.messages.length;
    b.jump(10 * MIN);
    assert.equal((await b.t.locker.sweep()).alerted, 1);
    const mails = accepting.messages.slice(mailsBefore);
    assert.equal(mails.length, 1);
    assert.match(mails[0]!.subject, /failed/i);
    assert.equal(messageIdOf(mails[0]!.raw), alertId(AlertReason.failure, key, 1, attempt));
    assert.deepEqual((await new DatastoreStore(datastore).get(key))!.lock_alerts, [`${claim}:sent`]);
    assert.equal((await b.t.locker.sweep()).alerted, 0);
    await b.t.locker.shutdown();
  });
});

describe('alerts: the usual cases owe nothing and cost nothing', () => {
  const datastore = legacyDatastore();
  const START = Date.parse('2031-07-08T09:10:11.000Z');

  /** A Locker on the emulator with a manual clock, whose alerter records (or fails while `down`). */
  function app(namespace: string, extra: Parameters<typeof taskApp>[1] = {}) {
    let now = START;
    const received: AlertEvent[] = [];
    const state = { down: false };
    const queue = new KeptTasks();
    const t = taskApp(new DatastoreStore(datastore, { namespaces: [namespace] }), {
      queue, clock: () => now, leaseDuration: 10_000, stallAfter: 20_000, alertTimeout: 1_000,
      alerter: (event) => {
        if (state.down) throw new Error('the mail server is down');
        received.push(event);
      },
      ...extra,
    });
    return { t, queue, received, state, advance: (ms: number) => { now += ms; }, now: () => now };
  }

  async function staleStep(s: ReturnType<typeof app>, namespace: string): Promise<{ key: Key; task: TaskRequest }> {
    const key = keys.key({ namespace, path: ['Order', `o-${Math.random().toString(36).slice(2, 8)}`] });
    await s.t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
    const store = new DatastoreStore(datastore);
    const props = (await store.get(key))!;
    await store.transaction(async (tx) => { tx.put(key, { ...props, lock_req: 'crashed-attempt', lock_ts: new Date(s.now() - 10 * MIN) }, []); });
    return { key, task: s.queue.last() };
  }

  it('sends a takeover\'s alert once and marks it sent in the step\'s own last write: the sweep sends nothing more', async () => {
    const namespace = uniqueNamespace('after-answer');
    const s = app(namespace);
    const { key, task } = await staleStep(s, namespace);
    s.t.behave(async (ctx) => { await ctx.schedule('/task'); });
    assert.equal((await deliver(s.t, task)).status, 200);
    assert.equal(s.received.length, 1);
    assert.equal(s.received[0]!.id, alertId(AlertReason.overwrite, key, 1, 'crashed-attempt'));
    const stored = (await new DatastoreStore(datastore).get(key))!;
    assert.equal(stored.lock_seq, 2);
    assert.equal(stored.lock_alerts, undefined, 'the schedule() write owes no alert');
    s.advance(10 * MIN);
    const swept = await s.t.locker.sweep();
    assert.equal(swept.alerted, 0);
    assert.equal(swept.resent, 1, 'the sweep did look at the entity (its next step stalled)');
    assert.equal(s.received.length, 1);
    await s.t.locker.shutdown();
  });

  it('a takeover whose handler fails keeps the alert marked sent on the released lock', async () => {
    const namespace = uniqueNamespace('after-answer');
    const s = app(namespace);
    const { key, task } = await staleStep(s, namespace);
    s.t.behave(() => { throw new Error('try again'); });
    assert.equal((await deliver(s.t, task)).status, 500);
    const attempt = s.t.runs[0]!.attempt;
    assert.deepEqual((await new DatastoreStore(datastore).get(key))!.lock_alerts, [`overwrite:1:crashed-attempt:${attempt}:sent`]);
    s.advance(10 * MIN);
    assert.equal((await s.t.locker.sweep()).alerted, 0);
    assert.equal(s.received.length, 1);
    await s.t.locker.shutdown();
  });

  it('when the alerter fails, the finished chain keeps its claim and a record due within the grace; the sweep sends it then, same id', async () => {
    const namespace = uniqueNamespace('after-answer');
    const s = app(namespace);
    const { key, task } = await staleStep(s, namespace);
    s.state.down = true;
    assert.equal((await deliver(s.t, task)).status, 200);
    assert.equal(s.received.length, 0);
    const attempt = s.t.runs[0]!.attempt;
    const stored = (await new DatastoreStore(datastore).get(key))!;
    assert.equal(stored.lock_state, StepState.complete);
    assert.deepEqual(stored.lock_alerts, [`overwrite:1:crashed-attempt:${attempt}`]);
    s.state.down = false;
    s.advance(1_000); // within the grace (2 × alertTimeout): the record is not due yet
    assert.equal((await s.t.locker.sweep()).alerted, 0);
    s.advance(1_500); // past it
    const swept = await s.t.locker.sweep();
    assert.equal(swept.alerted, 1);
    assert.equal(swept.cleared, 1, 'then the finished chain\'s record goes');
    assert.equal(s.received.length, 1);
    assert.equal(s.received[0]!.id, alertId(AlertReason.overwrite, key, 1, 'crashed-attempt'));
    assert.equal(s.received[0]!.newAttempt, attempt);
    assert.equal((await new DatastoreStore(datastore).get(key))!.lock_alerts, undefined);
    await s.t.locker.shutdown();
  });

  it('an alerter that stays down delays no step: the sweep re-delivers a stalled step and tries the alert again later', async () => {
    const namespace = uniqueNamespace('after-answer');
    const s = app(namespace);
    const { key, task } = await staleStep(s, namespace);
    s.state.down = true;
    s.t.behave(() => { throw new Error('try again'); });
    assert.equal((await deliver(s.t, task)).status, 500, 'released, its overwrite alert unsent');
    const tasks = s.queue.tasks.length;
    s.advance(10 * MIN); // the step stalled: nobody took the released lease
    const swept = await s.t.locker.sweep();
    assert.equal(swept.alerted, 0, 'the alerter is still down');
    assert.equal(swept.resent, 1, 'the step is re-delivered all the same');
    assert.equal(s.queue.tasks.length, tasks + 1);
    s.state.down = false;
    s.t.behave(() => undefined);
    assert.equal((await deliver(s.t, s.queue.last())).status, 200, 'the re-delivery runs the step');
    assert.deepEqual(s.received.map((e) => e.id), [alertId(AlertReason.overwrite, key, 1, 'crashed-attempt')], 'and sends the alert it found unmarked');
    assert.equal((await new DatastoreStore(datastore).get(key))!.lock_alerts, undefined);
    await s.t.locker.shutdown();
  });

  it('an unsent overwrite alert travels with the chain: the next step\'s attempt sends it and its own last write marks it', async () => {
    const namespace = uniqueNamespace('after-answer');
    const s = app(namespace);
    const { key, task } = await staleStep(s, namespace);
    s.state.down = true;
    s.t.behave(async (ctx) => { await ctx.schedule('/task'); });
    assert.equal((await deliver(s.t, task)).status, 200);
    assert.equal(((await new DatastoreStore(datastore).get(key))!.lock_alerts as string[]).length, 1, 'kept past the step');
    s.state.down = false;
    assert.equal((await deliver(s.t, s.queue.last())).status, 200, 'step 2 runs');
    assert.equal(s.received.length, 1);
    assert.equal(s.received[0]!.id, alertId(AlertReason.overwrite, key, 1, 'crashed-attempt'));
    const stored = (await new DatastoreStore(datastore).get(key))!;
    assert.equal(stored.lock_seq, 3);
    assert.equal(stored.lock_alerts, undefined);
    await s.t.locker.shutdown();
  });

  it('a step with no takeover makes the same store calls with alerts on as with no alerter at all', async () => {
    const calls = async (alerts: boolean): Promise<string[]> => {
      const namespace = uniqueNamespace('after-answer');
      const spy = spyClient(datastore, { keepRequests: false });
      const store = new DatastoreStore(datastore, { namespaces: [namespace], client: spy.client });
      const queue = new KeptTasks();
      const t: TaskApp = taskApp(store, { queue, ...(alerts ? {} : { alerter: undefined }) });
      const key = keys.key({ namespace, path: ['Order', 'plain'] });
      await t.locker.schedule(key, new Counter({ count: 0, label: 'x' }), '/task');
      t.behave(async (ctx) => { await ctx.schedule('/task'); });
      spy.clear(); // the kickoff's calls are behind it: schedule() resolves once its task is created
      assert.equal((await deliver(t, queue.last())).status, 200);
      t.behave(() => undefined);
      assert.equal((await deliver(t, queue.last())).status, 200);
      await t.locker.shutdown(); // the finished chain's record is removed: counted too
      const seen = [...spy.calls];
      await spy.close();
      assert.equal(t.alerts.length, 0);
      return seen;
    };
    const withAlerts = await calls(true);
    const without = await calls(false);
    assert.deepEqual(withAlerts, without);
    assert.ok(withAlerts.length > 0);
  });
});

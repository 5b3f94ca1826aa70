import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { createHmac } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import { ConfigError, QueueError } from '../../src/errors/errors';
import type { Logger, TaskRequest } from '../../src/types';
import { LocalQueue, type LocalQueueOptions } from '../../src/queue/local';
import { backoffMs, parseRetryAfter, retryDelayMs } from '../../src/queue/local-delivery';
import { bodyHash, LOCAL_SIGNATURE_TTL_MS, signLocalTask, verifyLocalSignature } from '../../src/queue/local-signature';

// ---------------------------------------------------------------------------------------------
// Helpers: a real express app on loopback that records what it receives.

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the app got the request. */
  at: number;
}

/** How the app answers the n-th request it receives (n from 0). */
type Answer = (req: Request, res: Response, n: number) => void | Promise<void>;

interface TestApp {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

const started: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  while (started.length > 0) await started.pop()?.close();
});

async function startApp(answer: Answer = (_req, res) => void res.status(200).end()): Promise<TestApp> {
  const app = express();
  const received: Received[] = [];
  app.use(express.text({ type: '*/*' }));
  app.use((req, res) => {
    const n = received.length;
    received.push({ path: req.path, headers: req.headers, body: typeof req.body === 'string' ? req.body : '', at: Date.now() });
    void answer(req, res, n);
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const testApp = {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  started.push(testApp);
  return testApp;
}

const quiet: Logger = { info() {}, warn() {}, error() {} };

/** A queue stopped after the test. */
function newQueue(options: LocalQueueOptions): LocalQueue {
  const queue = new LocalQueue({ logger: quiet, minBackoffMs: 1, maxBackoffMs: 20, ...options });
  started.push({ close: () => queue.shutdown() });
  return queue;
}

function task(name: string, more: Partial<TaskRequest> = {}): TaskRequest {
  return { name, path: '/step', headers: { 'X-Lock-Key': `key-${name}`, 'X-Lock-Seq': '1' }, body: JSON.stringify({ name }), ...more };
}

/** The X-CloudTasks-TaskETA header as epoch milliseconds. */
function etaMs(headers: IncomingHttpHeaders): number {
  return Math.round(Number(headers['x-cloudtasks-tasketa']) * 1000);
}

/** POSTs `{}` on a connection of its own (none left open afterwards); resolves with the status. */
function postStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

/** Lets handles being closed finish closing (their close callbacks run after the check phase). */
async function handlesClosed(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Whether `promise` settles within `ms` (a watchdog against hangs, not a speed check). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const watchdog = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), watchdog]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------

describe('LocalQueue', () => {
  describe('delivery', () => {
    it('POSTs the body to baseUrl + path with the task headers and the Cloud Tasks headers', async () => {
      const app = await startApp();
      const delivered: Array<[string, number, number]> = [];
      const queue = newQueue({ baseUrl: app.url, queueName: 'demo-queue', onDelivered: (t, status, attempt) => delivered.push([t.name, status, attempt]) });
      const before = Date.now();
      await queue.enqueue({
        name: 'first-task',
        path: '/orders/charge',
        headers: { 'X-Lock-Key': 'abc', 'X-Lock-Seq': '3', 'X-Extra': 'yes', 'X-CloudTasks-TaskRetryCount': '99' },
        body: '{"amount":42}',
      });
      const after = Date.now();
      await queue.idle();

      assert.equal(app.received.length, 1);
      const [got] = app.received;
      assert.equal(got.path, '/orders/charge');
      assert.equal(got.body, '{"amount":42}');
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['x-lock-key'], 'abc');
      assert.equal(got.headers['x-lock-seq'], '3');
      assert.equal(got.headers['x-extra'], 'yes');
      assert.equal(got.headers['x-cloudtasks-queuename'], 'demo-queue');
      assert.equal(got.headers['x-cloudtasks-taskname'], 'first-task');
      assert.equal(got.headers['x-cloudtasks-taskretrycount'], '0', 'the task may not set Cloud Tasks headers');
      assert.equal(got.headers['x-cloudtasks-taskexecutioncount'], '0');
      assert.match(String(got.headers['x-cloudtasks-tasketa']), /^\d+\.\d{6}$/);
      assert.ok(etaMs(got.headers) >= before && etaMs(got.headers) <= after, 'an unscheduled task is due when enqueued');
      assert.equal(got.headers['x-cloudtasks-taskpreviousresponse'], undefined);
      assert.equal(got.headers['x-cloudtasks-taskretryreason'], undefined);
      assert.deepEqual(delivered, [['first-task', 200, 1]]);
      assert.deepEqual(queue.stats(), { pending: 0, inFlight: 0, delivered: 1, failedAttempts: 0, givenUp: 0, duplicates: 0 });
    });

    it("gives baseUrl's path as its basePath, asked of a baseUrl function each time", () => {
      let url = 'http://127.0.0.1:9/api/';
      const queue = newQueue({ baseUrl: () => url });
      assert.equal(queue.basePath, '/api');
      url = 'http://127.0.0.1:9';
      assert.equal(queue.basePath, '');
      url = 'not a url';
      assert.equal(queue.basePath, undefined, 'none while baseUrl gives no URL');
    });

    it('asks a baseUrl function at every attempt', async () => {
      const app = await startApp();
      let port = '';
      const queue = newQueue({ baseUrl: () => `http://127.0.0.1:${port}/` });
      port = new URL(app.url).port;
      await queue.enqueue(task('late-port'));
      await queue.idle();
      assert.equal(app.received.length, 1);
      assert.equal(app.received[0].path, '/step');
    });
  });

  describe('retries', () => {
    it('retries 500 and 503 and other non-2xx answers, with growing counts, until a 2xx', async () => {
      const statuses = [500, 503, 404, 200];
      const app = await startApp((_req, res, n) => void res.status(statuses[n]).end());
      const delivered: Array<[number, number]> = [];
      const queue = newQueue({ baseUrl: app.url, onDelivered: (_t, status, attempt) => delivered.push([status, attempt]) });
      await queue.enqueue(task('flaky'));
      await queue.idle();

      assert.equal(app.received.length, 4);
      const header = (name: string) => app.received.map((r) => r.headers[name]);
      assert.deepEqual(header('x-cloudtasks-taskretrycount'), ['0', '1', '2', '3']);
      assert.deepEqual(header('x-cloudtasks-taskexecutioncount'), ['0', '1', '2', '3']);
      assert.deepEqual(header('x-cloudtasks-taskpreviousresponse'), [undefined, '500', '503', '404']);
      assert.deepEqual(header('x-cloudtasks-taskretryreason'), [undefined, 'HTTP_ERROR', 'HTTP_ERROR', 'HTTP_ERROR']);
      assert.deepEqual(header('x-cloudtasks-taskname'), ['flaky', 'flaky', 'flaky', 'flaky']);
      for (let i = 1; i < 4; i++) {
        assert.ok(etaMs(app.received[i].headers) > etaMs(app.received[i - 1].headers), 'a retry is due later than the attempt before');
        assert.ok(app.received[i].at >= etaMs(app.received[i].headers), 'no attempt comes before its ETA');
      }
      assert.deepEqual(delivered, [[200, 4]]);
      assert.equal(queue.stats().failedAttempts, 3);
    });

    it('retries a network error without counting an execution', async () => {
      const app = await startApp();
      const closed = await startApp();
      const deadUrl = closed.url;
      await started.pop()?.close(); // nothing listens on deadUrl any more
      let url = deadUrl;
      const logs: string[] = [];
      const queue = newQueue({ baseUrl: () => url, logger: { ...quiet, info: (message) => void logs.push(message) } });
      await queue.enqueue(task('unreachable'));
      while (queue.stats().failedAttempts === 0) await sleep(5);
      url = app.url;
      await queue.idle();

      const last = app.received[app.received.length - 1];
      assert.ok(Number(last.headers['x-cloudtasks-taskretrycount']) >= 1);
      assert.equal(last.headers['x-cloudtasks-taskexecutioncount'], '0');
      assert.equal(last.headers['x-cloudtasks-taskpreviousresponse'], '0');
      assert.equal(last.headers['x-cloudtasks-taskretryreason'], 'CONNECTION_ERROR');
      assert.ok(logs.length >= 1, 'each retry is logged');
    });

    it('waits as long as Retry-After says when that is longer than the backoff', async () => {
      let answeredAt = 0;
      const app = await startApp((_req, res, n) => {
        if (n > 0) return void res.status(200).end();
        answeredAt = Date.now();
        res.status(503).set('Retry-After', '1').end();
      });
      const queue = newQueue({ baseUrl: app.url });
      await queue.enqueue(task('throttled'));
      await queue.idle();

      assert.equal(app.received.length, 2);
      assert.ok(app.received[1].at >= answeredAt + 1000, `retried ${app.received[1].at - answeredAt} ms after the 503`);
      assert.equal(app.received[1].headers['x-cloudtasks-taskpreviousresponse'], '503');
    });

    it('gives up after maxAttempts: onGiveUp is called, an error logged, and no request follows', async () => {
      const app = await startApp((_req, res) => void res.status(500).end());
      const gaveUp: Array<[string, number | undefined]> = [];
      const errors: string[] = [];
      const queue = newQueue({
        baseUrl: app.url,
        maxAttempts: 3,
        logger: { ...quiet, error: (m) => void errors.push(m) },
        onGiveUp: (t, status) => gaveUp.push([t.name, status]),
        onDelivered: () => assert.fail('nothing is delivered'),
      });
      await queue.enqueue(task('doomed'));
      await queue.idle();

      assert.equal(app.received.length, 3);
      assert.deepEqual(gaveUp, [['doomed', 500]]);
      assert.equal(errors.length, 1);
      assert.deepEqual(queue.stats(), { pending: 0, inFlight: 0, delivered: 0, failedAttempts: 3, givenUp: 1, duplicates: 0 });
    });

    it('aborts an attempt at the dispatch deadline and retries it as one without a response', async () => {
      let firstAborted: Promise<boolean> = Promise.resolve(false);
      const app = await startApp((_req, res, n) => {
        if (n > 0) return void res.status(204).end();
        firstAborted = new Promise((resolve) => res.on('close', () => resolve(!res.writableFinished)));
        // never answers
      });
      const delivered: Array<[number, number]> = [];
      const queue = newQueue({ baseUrl: app.url, dispatchDeadlineMs: 300, onDelivered: (_t, s, a) => delivered.push([s, a]) });
      await queue.enqueue(task('slow'));
      await queue.idle();

      assert.equal(await firstAborted, true, 'the hanging request was aborted');
      assert.ok(app.received.length >= 2);
      const retry = app.received[1].headers;
      assert.equal(retry['x-cloudtasks-taskretrycount'], '1');
      assert.equal(retry['x-cloudtasks-taskexecutioncount'], '0');
      assert.equal(retry['x-cloudtasks-taskpreviousresponse'], '0');
      assert.equal(retry['x-cloudtasks-taskretryreason'], 'DEADLINE_EXCEEDED');
      // On a loaded machine the 204 itself may miss the deadline and be retried: the last attempt is the delivered one.
      assert.deepEqual(delivered, [[204, app.received.length]]);
    });
  });

  describe('backoff', () => {
    it('doubles from minBackoff maxDoublings times, then grows linearly, capped at maxBackoff (Cloud Tasks docs example)', () => {
      const policy = { minBackoffMs: 10_000, maxBackoffMs: 300_000, maxDoublings: 3 };
      const waits = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffMs(policy, n) / 1000);
      assert.deepEqual(waits, [10, 20, 40, 80, 160, 240, 300, 300]);
    });

    it('is min(maxBackoff, minBackoff * 2^n) while n is within maxDoublings', () => {
      const policy = { minBackoffMs: 100, maxBackoffMs: 10_000, maxDoublings: 16 };
      assert.deepEqual([1, 2, 3, 4, 7, 8].map((n) => backoffMs(policy, n)), [100, 200, 400, 800, 6400, 10_000]);
      assert.equal(backoffMs({ ...policy, minBackoffMs: 0 }, 50), 0);
    });

    it('takes Retry-After only when it is longer than the backoff', () => {
      const policy = { minBackoffMs: 100, maxBackoffMs: 10_000, maxDoublings: 16 };
      assert.equal(retryDelayMs(policy, 3, 2000), 2000);
      assert.equal(retryDelayMs(policy, 3, 50), 400);
      assert.equal(retryDelayMs(policy, 3, undefined), 400);
    });

    it('reads Retry-After as seconds or as an HTTP date', () => {
      const now = Date.parse('2024-05-01T12:00:00Z');
      assert.equal(parseRetryAfter('7', now), 7000);
      assert.equal(parseRetryAfter('Wed, 01 May 2024 12:00:30 GMT', now), 30_000);
      assert.equal(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now), 0);
      assert.equal(parseRetryAfter('soon', now), undefined);
      assert.equal(parseRetryAfter(undefined, now), undefined);
    });
  });

  describe('schedule times and order', () => {
    it('delivers no task before its scheduleTime, and sends it as the ETA', async () => {
      const app = await startApp();
      const queue = newQueue({ baseUrl: app.url, concurrency: 1 }); // one at a time: arrival order is dispatch order
      const now = Date.now();
      const times: Record<string, number> = { past: now - 5000, a: now + 300, b: now + 100, c: now + 200 };
      for (const name of ['past', 'a', 'c', 'b']) await queue.enqueue(task(name, { scheduleTime: new Date(times[name]) }));
      await queue.idle();

      assert.deepEqual(app.received.map((r) => r.headers['x-cloudtasks-taskname']), ['past', 'b', 'c', 'a']);
      for (const got of app.received) {
        const name = String(got.headers['x-cloudtasks-taskname']);
        assert.ok(got.at >= times[name], `${name} arrived ${times[name] - got.at} ms early`);
        assert.equal(etaMs(got.headers), times[name]);
      }
    });

    it('never has more than `concurrency` requests in flight', async () => {
      let inFlight = 0;
      let most = 0;
      const app = await startApp(async (_req, res) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await sleep(30);
        inFlight -= 1;
        res.status(200).end();
      });
      const queue = newQueue({ baseUrl: app.url, concurrency: 2 });
      for (let i = 0; i < 6; i++) await queue.enqueue(task(`slow-${i}`));
      assert.equal(queue.stats().inFlight, 2);
      assert.equal(queue.stats().pending, 4);
      await queue.idle();

      assert.equal(app.received.length, 6);
      assert.equal(most, 2);
      assert.equal(queue.stats().delivered, 6);
    });

    it('lets waiting tasks run in order of due time when a slot frees', async () => {
      let release = () => {};
      let blockerArrived = () => {};
      const arrived = new Promise<void>((resolve) => (blockerArrived = resolve));
      const app = await startApp((_req, res, n) => {
        if (n > 0) return void res.status(200).end();
        blockerArrived();
        release = () => void res.status(200).end();
      });
      const queue = newQueue({ baseUrl: app.url, concurrency: 1 });
      await queue.enqueue(task('blocker'));
      await arrived;
      const now = Date.now();
      await queue.enqueue(task('third', { scheduleTime: new Date(now - 10) }));
      await queue.enqueue(task('first', { scheduleTime: new Date(now - 30) }));
      await queue.enqueue(task('second', { scheduleTime: new Date(now - 20) }));
      release();
      await queue.idle();

      assert.deepEqual(app.received.map((r) => r.headers['x-cloudtasks-taskname']), ['blocker', 'first', 'second', 'third']);
    });
  });

  describe('task names', () => {
    it('delivers a task once however often its name is enqueued within the window', async () => {
      const app = await startApp();
      const queue = newQueue({ baseUrl: app.url });
      await Promise.all([queue.enqueue(task('dup')), queue.enqueue(task('dup', { body: '"other"' }))]);
      await queue.idle();
      await queue.enqueue(task('dup'));
      await queue.idle();

      assert.equal(app.received.length, 1);
      assert.equal(app.received[0].body, JSON.stringify({ name: 'dup' }));
      assert.equal(queue.stats().duplicates, 2);
    });

    it('keeps a given-up name taken too', async () => {
      const app = await startApp((_req, res) => void res.status(500).end());
      const queue = newQueue({ baseUrl: app.url, maxAttempts: 1 });
      await queue.enqueue(task('failed-once'));
      await queue.idle();
      await queue.enqueue(task('failed-once'));
      await queue.idle();
      assert.equal(app.received.length, 1);
    });

    it('accepts a name again once the de-duplication window has passed', async () => {
      const app = await startApp();
      const queue = newQueue({ baseUrl: app.url, dedupWindowMs: 20 });
      await queue.enqueue(task('again'));
      await queue.idle();
      await sleep(40);
      await queue.enqueue(task('again'));
      await queue.idle();
      assert.equal(app.received.length, 2);
    });

    it('refuses tasks that Cloud Tasks would refuse, with QueueError', async () => {
      const queue = newQueue({ baseUrl: 'http://127.0.0.1:9' });
      await assert.rejects(queue.enqueue(task('bad/name')), QueueError);
      await assert.rejects(queue.enqueue(task('no-slash', { path: 'step' })), QueueError);
      await assert.rejects(queue.enqueue(task('too-big', { body: 'x'.repeat(101 * 1024) })), QueueError);
      const farAhead = new Date(Date.now() + 31 * 24 * 3_600_000);
      await assert.rejects(queue.enqueue(task('too-late', { scheduleTime: farAhead })), QueueError);
      await assert.rejects(queue.enqueue(task('bad-header', { headers: { 'X-Bad': 'line\nbreak' } })), QueueError);
      assert.equal(queue.stats().pending, 0);
    });
  });

  describe('signature', () => {
    it('signs every request so that authenticator() accepts it, and refuses forged or unsigned ones', async () => {
      const verdicts: boolean[] = [];
      let auth: ReturnType<LocalQueue['authenticator']> = () => ({ ok: false, status: 401, reason: 'not ready' });
      const app = await startApp(async (req, res) => {
        const verdict = await auth({ method: req.method, url: req.originalUrl, headers: req.headers });
        verdicts.push(verdict.ok);
        res.status(verdict.ok ? 200 : verdict.status).end();
      });
      const delivered: number[] = [];
      const secret = 'queue-secret-for-the-replay-test';
      const queue = newQueue({ baseUrl: app.url, secret, onDelivered: (_t, status) => delivered.push(status) });
      auth = queue.authenticator();
      await queue.enqueue(task('signed'));
      await queue.idle();
      assert.deepEqual(delivered, [200]);

      const genuine = app.received[0].headers;
      const base: Record<string, string> = {};
      for (const name of ['x-lock-key', 'x-lock-seq', 'x-cloudtasks-taskname', 'x-locker-expires', 'x-locker-body-sha256']) base[name] = String(genuine[name]);
      const signature = String(genuine['x-locker-signature']);
      const post = (headers: Record<string, string>, path = '/step') => postStatus(`${app.url}${path}`, headers);
      const otherSecret = 'another-secret-of-enough-bytes';
      const forged = signLocalTask(otherSecret, {
        expires: base['x-locker-expires']!, path: '/step', taskName: 'signed', key: base['x-lock-key']!, seq: base['x-lock-seq']!,
        chain: '', send: '', bodyHash: base['x-locker-body-sha256']!,
      });
      assert.equal(await post(base), 401, 'unsigned');
      assert.equal(await post({ ...base, 'x-locker-signature': forged }), 401, 'signed with another secret');
      assert.equal(await post({ ...base, 'x-lock-seq': '2', 'x-locker-signature': signature }), 401, 'replayed for another step');
      assert.equal(await post({ ...base, 'x-locker-signature': signature }, '/other-step'), 401, 'replayed on another route');
      assert.equal(await post({ ...base, 'x-lock-chain': 'another-chain', 'x-locker-signature': signature }), 401, 'replayed for another chain');
      assert.equal(await post({ ...base, 'x-lock-send': '2', 'x-locker-signature': signature }), 401, 'replayed as another send');
      assert.equal(await post({ ...base, 'x-locker-body-sha256': bodyHash('{"name":"other"}'), 'x-locker-signature': signature }), 401, 'replayed with another body');
      const later = Number(base['x-locker-expires']) * 1000 + 1;
      assert.equal(await post({ ...base, 'x-locker-expires': String(Number(base['x-locker-expires']) + 3600), 'x-locker-signature': signature }), 401, 'its expiry pushed back');
      assert.equal(await post({ ...base, 'x-locker-signature': signature }), 200, 'the genuine signature still verifies');
      assert.deepEqual(verdicts, [true, false, false, false, false, false, false, false, false, true]);
      assert.deepEqual(verifyLocalSignature(secret, { url: '/step', headers: { ...base, 'x-locker-signature': signature } }, later), { ok: false, status: 401, reason: 'the signature has expired' });
      assert.equal(app.received[0].headers['x-locker-body-sha256'], bodyHash(JSON.stringify({ name: 'signed' })), 'the hash of the body sent');
      assert.ok(Number(base['x-locker-expires']) * 1000 - Date.now() <= LOCAL_SIGNATURE_TTL_MS + 1000, 'expires within the TTL (rounded up to a second)');
    });

    it('is the documented HMAC-SHA256 over expiry, path, name, key, seq, chain, send and body hash', () => {
      const secret = 'a-secret-of-at-least-16-bytes';
      const hash = bodyHash('{}');
      const expected = createHmac('sha256', secret).update(`v2\n2000000000\n/tasks/step?x=1\ntask-1\nKEY\n7\nCHAIN\n\n${hash}`).digest('hex');
      const parts = { expires: '2000000000', path: '/tasks/step?x=1', taskName: 'task-1', key: 'KEY', seq: '7', chain: 'CHAIN', send: '', bodyHash: hash };
      assert.equal(signLocalTask(secret, parts), expected);
      const headers = {
        'x-cloudtasks-taskname': 'task-1', 'x-lock-key': 'KEY', 'x-lock-seq': '7', 'x-lock-chain': 'CHAIN',
        'x-locker-expires': '2000000000', 'x-locker-body-sha256': hash, 'x-locker-signature': expected,
      };
      assert.deepEqual(verifyLocalSignature(secret, { url: '/tasks/step?x=1', headers }), { ok: true, bodySha256: hash }, 'accepted, with the signed body hash for handle() to check the body against');
      assert.equal(verifyLocalSignature(secret, { url: '/tasks/step', headers }).ok, false, 'the query is signed too');
      const refused = verifyLocalSignature(secret, { url: '/tasks/step?x=1', headers: { ...headers, 'x-locker-signature': expected.slice(0, -1) + (expected.endsWith('0') ? '1' : '0') } });
      assert.equal(refused.ok, false);
      assert.equal(refused.ok === false && refused.status, 401);
      const missing = verifyLocalSignature(secret, { url: '/tasks/step?x=1', headers: { ...headers, 'x-locker-signature': undefined } });
      assert.equal(missing.ok === false && missing.status, 401);
    });

    it('signs with the secret it is given', async () => {
      const secret = 'shared-secret-for-two-processes';
      const app = await startApp();
      const queue = newQueue({ baseUrl: app.url, secret });
      await queue.enqueue(task('with-secret'));
      await queue.idle();
      assert.deepEqual(verifyLocalSignature(secret, { url: app.received[0].path, headers: app.received[0].headers }), { ok: true, bodySha256: bodyHash(app.received[0].body) });
    });
  });

  describe('shutdown', () => {
    it('aborts requests in flight, clears every timer, and refuses new tasks', async () => {
      const liveTimers = new Set<number>();
      const hook = createHook({
        init(id, type) {
          if (type !== 'Timeout') return;
          const limit = Error.stackTraceLimit;
          Error.stackTraceLimit = 50;
          const stack = new Error().stack ?? '';
          Error.stackTraceLimit = limit;
          if (/src[\\/]queue[\\/]local/.test(stack)) liveTimers.add(id);
        },
        destroy(id) {
          liveTimers.delete(id);
        },
      });
      hook.enable();
      try {
        let hangingClosed: Promise<boolean> = Promise.resolve(false);
        let hangingArrived = () => {};
        const arrived = new Promise<void>((resolve) => (hangingArrived = resolve));
        const app = await startApp((_req, res) => {
          hangingClosed = new Promise((resolve) => res.on('close', () => resolve(!res.writableFinished)));
          hangingArrived();
        });
        await handlesClosed();
        const resourcesBefore = process.getActiveResourcesInfo().filter((r) => r !== 'Timeout').sort();
        const queue = newQueue({ baseUrl: app.url });
        await queue.enqueue(task('hangs'));
        await queue.enqueue(task('later', { scheduleTime: new Date(Date.now() + 3_600_000) }));
        await arrived;
        assert.ok(liveTimers.size >= 2, 'the schedule timer and the dispatch deadline are running');
        assert.deepEqual(queue.stats().inFlight, 1);

        const stopped = await settlesWithin(queue.shutdown(), 5000);
        if (!stopped) await app.close(); // unblock the hanging request so the suite can end
        assert.ok(stopped, 'shutdown resolved although a request was hanging');
        assert.equal(await hangingClosed, true, 'the request in flight was aborted');
        await handlesClosed(); // closed handles and destroy hooks are settled asynchronously
        assert.equal(liveTimers.size, 0, 'no timer of the queue is left');
        assert.deepEqual(queue.stats(), { pending: 0, inFlight: 0, delivered: 0, failedAttempts: 0, givenUp: 0, duplicates: 0 });
        assert.deepEqual(process.getActiveResourcesInfo().filter((r) => r !== 'Timeout').sort(), resourcesBefore);
        await assert.rejects(queue.enqueue(task('too-late')), QueueError);
        await queue.idle();
        assert.equal(app.received.length, 1);
      } finally {
        hook.disable();
      }
    });
  });

  describe('options', () => {
    it('rejects invalid options with a ConfigError that names the option', () => {
      const cases: Array<[Partial<LocalQueueOptions>, RegExp]> = [
        [{}, /baseUrl/],
        [{ baseUrl: 'ftp://127.0.0.1' }, /baseUrl/],
        [{ baseUrl: 'not a url' }, /baseUrl/],
        [{ baseUrl: 'http://127.0.0.1', concurrency: 0 }, /concurrency/],
        [{ baseUrl: 'http://127.0.0.1', maxAttempts: 0 }, /maxAttempts/],
        [{ baseUrl: 'http://127.0.0.1', minBackoffMs: -1 }, /minBackoffMs/],
        [{ baseUrl: 'http://127.0.0.1', minBackoffMs: 500, maxBackoffMs: 100 }, /maxBackoffMs/],
        [{ baseUrl: 'http://127.0.0.1', dispatchDeadlineMs: 1.5 }, /dispatchDeadlineMs/],
        [{ baseUrl: 'http://127.0.0.1', queueName: 'bad name' }, /queueName/],
        [{ baseUrl: 'http://127.0.0.1', secret: 'short' }, /secret/],
        [{ baseUrl: 'http://127.0.0.1', logger: {} as Logger }, /logger/],
        [{ baseUrl: 'http://127.0.0.1', onGiveUp: 'no' as unknown as LocalQueueOptions['onGiveUp'] }, /onGiveUp/],
      ];
      for (const [options, mentions] of cases) {
        assert.throws(() => new LocalQueue(options as LocalQueueOptions), (err: unknown) => err instanceof ConfigError && mentions.test(err.message));
      }
    });

    it('accepts unlimited attempts and undefined options', async () => {
      const queue = new LocalQueue({ baseUrl: 'http://127.0.0.1:9', maxAttempts: -1, concurrency: undefined });
      assert.equal(queue.stats().pending, 0);
      await queue.shutdown();
    });
  });
});

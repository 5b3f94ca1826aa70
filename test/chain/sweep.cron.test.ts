// The sweep route as App Engine cron reaches it: a GET carrying `X-Appengine-Cron: true`, admitted
// by appEngineCronAuthenticator() through locker.sweepHandler(), and everything that must not get
// in: no header, another value, a task request's queue header, a GET where no authenticator is in
// effect, a method that is neither GET nor POST. Each refused request leaves the stalled step
// where it was; the admitted one re-delivers it.
import { describe, it, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Datastore } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { appEngineCronAuthenticator } from '../../src/auth/app-engine-cron';
import { appEngineAuthenticator } from '../../src/auth/app-engine';
import type { AuthRequest } from '../../src/types';
import { RecordingQueue } from '../support/recording-queue';
import { MemoryLogger } from '../support/task-app';

const STALL_AFTER = 60_000;
const keys = new Datastore({ projectId: 'cron-test' });

/** A Locker whose first task was never created (the queue failed), with its clock past `stallAfter`. */
async function stalledStep() {
  let now = Date.UTC(2026, 0, 1);
  const queue = new RecordingQueue();
  const logger = new MemoryLogger();
  const locker = new Locker({
    store: new MemoryStore(), queue, logger, clock: () => now, stallAfter: STALL_AFTER, leaseDuration: 10_000,
    authenticate: appEngineAuthenticator({ queues: ['steps'], skipPlatformCheck: true }),
  });
  queue.failNext = 1;
  await locker.schedule(keys.key(['Order', 'o-1']), {}, '/tasks/order').catch(() => undefined);
  assert.equal(queue.tasks.length, 0, 'the kickoff task was not created');
  now += STALL_AFTER + 1;
  return { locker, queue, logger };
}

describe('appEngineCronAuthenticator()', () => {
  const authenticate = appEngineCronAuthenticator({ skipPlatformCheck: true });
  const req = (headers: AuthRequest['headers']): AuthRequest => ({ method: 'GET', url: '/sweep', headers });

  it('accepts X-Appengine-Cron: true', async () => {
    assert.deepEqual(await authenticate(req({ 'x-appengine-cron': 'true' })), { ok: true });
  });

  it('refuses a missing header, another value and a task request with 401', async () => {
    for (const headers of [{}, { 'x-appengine-cron': 'false' }, { 'x-appengine-cron': 'TRUE ' }, { 'x-appengine-queuename': 'steps' }]) {
      const verdict = await authenticate(req(headers));
      assert.equal(verdict.ok, false, JSON.stringify(headers));
      assert.equal(verdict.ok === false && verdict.status, 401);
      assert.match(verdict.ok === false ? verdict.reason : '', /X-Appengine-Cron/);
    }
  });
});

describe('sweepHandler() for App Engine cron (GET with X-Appengine-Cron)', () => {
  let t: Awaited<ReturnType<typeof stalledStep>>;
  let app: express.Express;
  beforeEach(async () => {
    t = await stalledStep();
    app = express();
    app.get('/cron/sweep', t.locker.sweepHandler({ authenticate: appEngineCronAuthenticator({ skipPlatformCheck: true }) }));
  });

  it('runs the sweep on cron’s GET and re-delivers the stalled step', async () => {
    const res = await request(app).get('/cron/sweep').set('X-Appengine-Cron', 'true');
    assert.equal(res.status, 200);
    assert.equal(res.body.resent, 1);
    assert.deepEqual(t.queue.tasks.map((task) => task.path), ['/tasks/order']);
  });

  it('refuses a GET without the header, or with the task queue’s header, before sweeping', async () => {
    const bare = await request(app).get('/cron/sweep');
    assert.equal(bare.status, 401);
    const task = await request(app).get('/cron/sweep').set('X-AppEngine-QueueName', 'steps');
    assert.equal(task.status, 401);
    const wrong = await request(app).get('/cron/sweep').set('X-Appengine-Cron', '1');
    assert.equal(wrong.status, 401);
    assert.equal(t.queue.tasks.length, 0, 'nothing was re-delivered');
    assert.equal(t.logger.lines.filter((l) => l.message === 'task request refused').length, 3);
  });

  it('takes the same sweep as a POST (Cloud Scheduler, or cron through app.all)', async () => {
    const both = express();
    both.all('/sweep', t.locker.sweepHandler({ authenticate: appEngineCronAuthenticator({ skipPlatformCheck: true }) }));
    const res = await request(both).post('/sweep').set('X-Appengine-Cron', 'true');
    assert.equal(res.status, 200);
    assert.equal(res.body.resent, 1);
    const put = await request(both).put('/sweep').set('X-Appengine-Cron', 'true');
    assert.equal(put.status, 405);
    assert.equal(t.queue.tasks.length, 1, 'the PUT swept nothing');
  });

  it('the Locker’s own authenticator guards a GET too when the route names none', async () => {
    const own = express();
    own.get('/sweep', t.locker.sweepHandler());
    assert.equal((await request(own).get('/sweep').set('X-Appengine-Cron', 'true')).status, 401, 'the Locker checks the queue header');
    assert.equal(t.queue.tasks.length, 0);
  });

  it('without an authenticator, a GET is refused with 405 and a POST sweeps', async () => {
    const open = express();
    open.all('/sweep', t.locker.sweepHandler({ authenticate: false }));
    const get = await request(open).get('/sweep');
    assert.equal(get.status, 405);
    assert.equal(get.text, 'a sweep without an authenticator takes POSTs only');
    assert.equal(t.queue.tasks.length, 0, 'a link or a prefetch cannot start a sweep');
    const post = await request(open).post('/sweep');
    assert.equal(post.status, 200);
    assert.equal(post.body.resent, 1);
  });
});

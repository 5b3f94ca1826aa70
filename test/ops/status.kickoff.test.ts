// A bulk kickoff's progress on the status page: every chain scheduleMany() starts carries the
// kickoff in lock_run, kept by each later step; the kickoff's page counts them by state through it
// (a progress bar, links to the kickoff's lists), and a chain another kickoff or schedule() starts
// on the entity counts no more. On MemoryStore with LocalQueue, the chains really run.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { MemoryStore } from '../../src/store/memory/store';
import { PermanentError } from '../../src/errors/errors';
import type { Authenticator } from '../../src/types';
import { MemoryLogger } from '../support/task-app';

const TOKEN = 'Bearer operator-secret';
const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no operator token' });
const CHAINS = 30;

describe('a bulk kickoff on the status page', () => {
  const store = new MemoryStore({ projectId: 'shop' });
  const logger = new MemoryLogger();
  const app = express();
  let server: Server;
  let queue: LocalQueue;
  let locker: Locker;
  const key = (i: number) => new Key({ path: ['Order', `o${i}`] });
  const get = (path: string) => request(app).get(`/ops${path}`).set('authorization', TOKEN);
  const progress = async (id: string) => (await get(`/kickoff.json?id=${id}`)).body as Record<string, { count: number; exact: boolean }>;

  before(async () => {
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    queue = new LocalQueue({ baseUrl: url, logger });
    locker = new Locker({ store, queue, logger });
    // Two steps each; the orders whose number ends in 7 fail for good at their second step.
    app.post('/charge', locker.handle(async (ctx) => { await ctx.schedule('/ship'); }, (p) => p, { kinds: ['Order'] }));
    app.post('/ship', locker.handle(async (ctx) => {
      if (String(ctx.key.name).endsWith('7')) throw new PermanentError('no address');
    }, (p) => p, { kinds: ['Order'] }));
    app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order'] }));
  });
  after(async () => {
    await queue.shutdown();
    await locker.shutdown();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('counts the kickoff\'s chains by state as they run, through lock_run kept by every step', async () => {
    const items = Array.from({ length: CHAINS }, (_, i) => ({ key: key(i), entity: { n: i }, path: '/charge' }));
    const result = await locker.scheduleMany(items, { kickoffId: 'orders-nov' });
    assert.equal(result.started, CHAINS);
    await locker.schedule(new Key({ path: ['Order', 'alone'] }), { n: -1 }, '/charge'); // not the kickoff's
    await queue.idle();
    assert.deepEqual(await progress('orders-nov'), {
      id: 'orders-nov', run: 'k:orders-nov',
      started: { count: CHAINS, exact: true }, live: { count: 0, exact: true }, failed: { count: 3, exact: true },
      complete: { count: CHAINS - 3, exact: true }, cancelled: { count: 0, exact: true },
    });
    assert.equal((await locker.inspect().step(key(1)))?.seq, 3, 'each chain ran two steps');
  });

  it('draws a progress bar and links each state to the kickoff\'s list', async () => {
    const page = await get('/kickoff?id=orders-nov');
    assert.equal(page.status, 200);
    assert.match(page.text, /<svg class="progress" viewBox="0 0 400 16"[^>]*aria-label="27 complete, 3 failed, 0 cancelled, 0 live, of 30"/);
    assert.match(page.text, /<rect x="0" y="0" width="360" height="16" fill="#2e7d32">/, '27 of 30 complete: 360 of 400');
    assert.match(page.text, /<rect x="360" y="0" width="40" height="16" fill="#b00020">/);
    assert.ok(!/style=/.test(page.text), 'no style attribute: the CSP allows none');
    const failed = await get('/steps.json?state=failed&kind=Order&kickoff=orders-nov');
    const names = (failed.body as { sections: Array<{ steps: Array<{ keyPath: string }> }> }).sections.flatMap((s) => s.steps.map((x) => x.keyPath)).sort();
    assert.deepEqual(names, ['Order:"o17"', 'Order:"o27"', 'Order:"o7"']);
  });

  it('counts a chain no more once another chain starts on its entity', async () => {
    await locker.retry(key(7)); // the same chain: still the kickoff's
    await queue.idle();
    assert.equal((await progress('orders-nov')).failed!.count, 3, 'retried, it failed again: still the kickoff\'s');
    await locker.schedule(key(17), { n: 17 }, '/charge'); // a new chain on a failed one's entity
    await queue.idle();
    const now = await progress('orders-nov');
    assert.equal(now.started!.count, CHAINS - 1);
    assert.equal(now.failed!.count, 2);
  });

  it('finds the kickoff by its id in the search box', async () => {
    const found = await get('/search?q=orders-nov');
    assert.equal(found.status, 303);
    assert.equal(found.headers.location, '/ops/kickoff?id=orders-nov');
    assert.equal(((await get('/search.json?q=orders-nov')).body as { kickoff?: string }).kickoff, 'orders-nov');
    assert.equal(((await get('/search.json?q=orders-dec')).body as { kickoff?: string }).kickoff, undefined);
  });

  it('answers a missing id with 400, and an unknown kickoff with nothing started', async () => {
    assert.equal((await get('/kickoff')).status, 400);
    assert.equal((await progress('never-ran')).started!.count, 0);
    assert.equal((await request(app).get('/ops/kickoff?id=orders-nov')).status, 401);
  });
});

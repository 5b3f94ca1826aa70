// A kickoff's and a fan-out's row as HTML (run-rows.ts), the lock_run of a kickoff id, and the
// status router's JSON routes for the rows: authenticated, paged, bad input a 400.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { kickoffRowHtml, progressBarSvg } from '../../src/ops/status/run-rows';
import { fanOutRun, kickoffRun, MAX_PLAIN_RUN_ID } from '../../src/rules/kickoff-plan';
import type { KickoffRow, RowProgress } from '../../src/ops/inspect/runs';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { RecordingQueue } from '../support/recording-queue';
import type { Authenticator } from '../../src/types';

const n = (count: number) => ({ count, exact: true });
const progress = (over: Partial<RowProgress> = {}): RowProgress => ({
  total: 300, started: 300, pending: n(60), complete: n(210), failed: n(30), cancelled: n(0), ...over,
});

describe('run-rows.ts', () => {
  it('draws the bar as SVG rects whose widths are the states\' shares of the total, with the numbers as text', () => {
    const svg = progressBarSvg(progress());
    assert.match(svg, /<rect class="bar-complete" x="0" y="0" width="140" /, '210 of 300: 140 of 200');
    assert.match(svg, /<rect class="bar-failed" x="140" y="0" width="20" /);
    assert.match(svg, /<rect class="bar-pending" x="160" y="0" width="40" /);
    assert.ok(!svg.includes('bar-cancelled'), 'an empty state draws nothing');
    assert.match(svg, /<title>complete 210 · failed 30 · cancelled 0 · pending 60 of 300<\/title>/);
  });
  it('escapes every value and has no style attribute and no script', () => {
    const row: KickoffRow = {
      kickoffId: '<script>alert(1)</script>"', run: 'k:x', state: 'finished', kinds: [{ kind: '<b>K', namespace: 'n"s', items: 1 }],
      startedAt: new Date(0), ageMs: 65_000, calls: 1, progress: progress(),
      oldestPending: { key: new Key({ path: ['K', '<i>'] }), encodedKey: 'enc"<', keyPath: 'K:"<i>"', since: new Date(0), ageMs: 1_000 },
    };
    const html = kickoffRowHtml(row, '/ops');
    assert.ok(!html.includes('<script>') && !html.includes('<b>') && !html.includes('<i>'), html);
    assert.ok(!/style=/.test(html));
    assert.match(html, /href="\/ops\/kickoff\?id=%3Cscript%3Ealert\(1\)%3C%2Fscript%3E%22"/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;&quot;/);
  });
});

describe('lock_run of a kickoff id', () => {
  it('is k: and the id up to 64 characters, k# and 22 characters of its hash past them; a fan-out\'s is f:', () => {
    assert.equal(kickoffRun('orders-nov'), 'k:orders-nov');
    assert.equal(kickoffRun('x'.repeat(MAX_PLAIN_RUN_ID)), `k:${'x'.repeat(MAX_PLAIN_RUN_ID)}`);
    const long = kickoffRun('x'.repeat(5_000));
    assert.match(long, /^k#[A-Za-z0-9_-]{22}$/);
    assert.notEqual(long, kickoffRun(`${'x'.repeat(4_999)}y`));
    assert.equal(fanOutRun('ab'), 'f:ab');
  });
});

describe('the status router\'s kickoff and fan-out JSON', () => {
  const TOKEN = 'Bearer ops';
  const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no token' });
  const locker = new Locker({ store: new MemoryStore({ projectId: 'p' }), queue: new RecordingQueue(), authenticate: false });
  const app = express();
  app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Job'] }));

  it('lists kickoffs newest first, paged, one with its chains by state; refuses without authentication', async () => {
    for (const id of ['first', 'second', 'third']) {
      await locker.scheduleMany(Array.from({ length: 3 }, (_, i) => ({ key: new Key({ path: ['Job', `${id}-${i}`] }), entity: {}, path: '/job' })), { kickoffId: id });
    }
    assert.equal((await request(app).get('/ops/kickoffs.json')).status, 401);
    const page = await request(app).get('/ops/kickoffs.json?limit=2').set('authorization', TOKEN);
    assert.equal(page.status, 200);
    const body = page.body as { kickoffs: Array<{ kickoffId: string; progress: RowProgress }>; cursor?: string };
    assert.equal(body.kickoffs.length, 2);
    assert.ok(body.cursor, 'a cursor to the rest');
    const rest = await request(app).get(`/ops/kickoffs.json?limit=2&cursor=${encodeURIComponent(body.cursor!)}`).set('authorization', TOKEN);
    const ids = [...body.kickoffs, ...(rest.body as typeof body).kickoffs].map((k) => k.kickoffId);
    assert.deepEqual(ids.slice().sort(), ['first', 'second', 'third']);
    const one = await request(app).get('/ops/kickoff-run.json?id=second&state=scheduled').set('authorization', TOKEN);
    assert.equal(one.status, 200);
    const detail = one.body as { progress: RowProgress; chains: Array<{ steps: Array<{ keyPath: string; run: string }> }> };
    assert.equal(detail.progress.total, 3);
    assert.equal(detail.progress.pending.count, 3, 'no task ran: all three scheduled');
    assert.deepEqual(detail.chains.flatMap((c) => c.steps.map((s) => s.keyPath)).sort(), ['Job:"second-0"', 'Job:"second-1"', 'Job:"second-2"']);
    assert.ok(detail.chains.every((c) => c.steps.every((s) => s.run === 'k:second')));
  });
  it('answers 400 to a bad fan-out id, an unknown kickoff and a state that is none', async () => {
    assert.equal((await request(app).get('/ops/fanout.json?id=nope').set('authorization', TOKEN)).status, 400);
    assert.equal((await request(app).get('/ops/kickoff-run.json?id=never-ran').set('authorization', TOKEN)).status, 400);
    assert.equal((await request(app).get('/ops/kickoff-run.json?id=first&state=bogus').set('authorization', TOKEN)).status, 400);
    assert.equal((await request(app).get('/ops/fanouts.json?namespace=elsewhere').set('authorization', TOKEN)).status, 400);
  });
});

// The status router's history table (/step), `history` in /step.json, and /throughput.json: behind
// the authenticator, every value escaped, `redact` applied to the route, bad input a 400.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { UNINDEXED_LOCK_FIELDS } from '../../src/rules/lock-fields';
import { StepState, type Authenticator } from '../../src/types';

const TOKEN = 'Bearer operator';
const auth: Authenticator = (req) => (req.headers.authorization === TOKEN ? { ok: true } : { ok: false, status: 401, reason: 'no operator token' });
const SECRET = 'tok-5f2b9c1d77';

async function fixture() {
  const store = new MemoryStore({ projectId: 'shop' });
  const locker = new Locker({ store, authenticate: false, redact: ['token'], logger: { info() {}, warn() {}, error() {} } });
  const now = Date.now();
  const key = new Key({ path: ['Order', 'o-1'] });
  const hist = [
    `3 complete ${now - 5_000} 120 1 0 /pay/<img>/${SECRET}`,
    `2 next ${now - 9_000} 2400 3 1 /charge?"&'`,
    `1 next ${now - 200_000} 80 1 0 /start`,
  ].join('\n');
  await store.transaction(async (tx) => {
    tx.put(key, { token: SECRET, lock_ts: new Date(now - 4_880), lock_req: '', lock_seq: 4, lock_try: 0, lock_state: StepState.complete, lock_chain: 'c1', lock_hist: hist }, UNINDEXED_LOCK_FIELDS);
  });
  const app = express();
  app.use('/ops', locker.statusRouter({ authenticate: auth, kinds: ['Order'] }));
  return { app, locker, key };
}

describe('the status router: a chain\'s history and the throughput picture', () => {
  it('asks the authenticator first on /throughput.json', async () => {
    const { app } = await fixture();
    const res = await request(app).get('/ops/throughput.json');
    assert.equal(res.status, 401);
    assert.equal(res.text, 'authentication required\n');
  });

  it('shows the history as a table, newest first, escaped, the redacted value scrubbed from the route', async () => {
    const { app, locker, key } = await fixture();
    const encoded = encodeURIComponent(locker.encodeKey(key));
    const page = await request(app).get(`/ops/step?key=${encoded}`).set('authorization', TOKEN);
    assert.equal(page.status, 200);
    const table = page.text.slice(page.text.indexOf('<table class="history">'), page.text.indexOf('</table>', page.text.indexOf('<table class="history">')));
    assert.deepEqual([...table.matchAll(/<tr data-seq="(\d+)" data-outcome="([a-z]+)">/g)].map((m) => [m[1], m[2]]), [['3', 'complete'], ['2', 'next'], ['1', 'next']]);
    assert.ok(table.includes('<code>/pay/&lt;img&gt;/[redacted]</code>'), 'escaped and redacted');
    assert.ok(table.includes('<code>/charge?&quot;&amp;&#39;</code>'));
    assert.ok(table.includes('takeover'));
    assert.ok(table.includes('2 s'), 'how long step 2 took');
    assert.ok(!page.text.includes(SECRET) && !page.text.includes('<img>'));
    const json = await request(app).get(`/ops/step.json?key=${encoded}`).set('authorization', TOKEN);
    const history = (json.body as { history: Array<{ seq: number; route: string; attempts: number; takeover: boolean; tookMs: number; startedAt: string }> }).history;
    assert.deepEqual(history.map((e) => [e.seq, e.route, e.attempts, e.takeover, e.tookMs]), [
      [3, '/pay/<img>/[redacted]', 1, false, 120], [2, `/charge?"&'`, 3, true, 2400], [1, '/start', 1, false, 80],
    ]);
    assert.equal(typeof history[0]!.startedAt, 'string');
    assert.ok(!json.text.includes(SECRET));
  });

  it('/throughput.json: the steps that ended per minute over the window asked for, and 400 for a bad one', async () => {
    const { app } = await fixture();
    const res = await request(app).get('/ops/throughput.json').set('authorization', TOKEN);
    assert.equal(res.status, 200);
    const body = res.body as { since: string; now: string; finished: number; buckets: Array<{ finished: number }>; cut: string[]; entities: number };
    // From the start of the minute an hour ago to now: the minute now is in included.
    assert.equal(Date.parse(body.since) % 60_000, 0);
    assert.ok(Date.parse(body.now) - Date.parse(body.since) >= 60 * 60_000);
    assert.equal(body.buckets.length, Math.ceil((Date.parse(body.now) - Date.parse(body.since)) / 60_000));
    assert.equal(body.finished, 3, 'the three steps ended within the hour');
    assert.equal(body.entities, 1);
    assert.deepEqual(body.cut, []);
    const short = await request(app).get('/ops/throughput.json?minutes=1').set('authorization', TOKEN);
    assert.equal((short.body as { finished: number }).finished, 2, 'only the steps of the minute now is in and the one before');
    for (const bad of ['0', '1441', 'x', '-5', '1e3']) {
      assert.equal((await request(app).get(`/ops/throughput.json?minutes=${bad}`).set('authorization', TOKEN)).status, 400, bad);
    }
  });
});

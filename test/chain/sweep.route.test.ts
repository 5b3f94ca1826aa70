// The sweep route is cheap to call: concurrent calls share one sweep, a call within minIntervalMs
// of the last sweep's start is answered 429 and reads nothing, and a bad option is a ConfigError.
// The sweeps are counted where they start, at the store (a wrapper on listDue, the query every sweep
// begins with).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import { Locker } from '../../src/locker';
import { ConfigError } from '../../src/errors/errors';
import { MemoryStore } from '../../src/store/memory/store';
import type { DueLedger } from '../../src/types';
import { RecordingQueue } from '../support/recording-queue';
import { MemoryLogger } from '../support/task-app';

/** A memory store whose sweep query counts its calls and waits for `release()` when `hold` is set. */
class CountingStore extends MemoryStore {
  listed = 0;
  hold: Promise<void> | undefined;
  override async listDue(now: Date, limit: number): Promise<DueLedger> {
    this.listed++;
    await this.hold;
    return super.listDue(now, limit);
  }
}

function fixture(minIntervalMs?: number) {
  const store = new CountingStore();
  let now = Date.parse('2026-01-01T00:00:00Z');
  const logger = new MemoryLogger();
  const locker = new Locker({ store, queue: new RecordingQueue(), authenticate: false, logger, clock: () => now });
  const app = express();
  let arrived = 0;
  let second!: () => void;
  const bothArrived = new Promise<void>((resolve) => { second = resolve; });
  // The route runs the sweep synchronously (no authenticator to await): once next() returns, the call has reached the gate.
  app.post('/sweep', (_req, _res, next) => { next(); if (++arrived === 2) second(); }, locker.sweepHandler(minIntervalMs === undefined ? {} : { minIntervalMs }));
  return { store, app, logger, bothArrived, advance: (ms: number) => { now += ms; } };
}

describe('sweepHandler(): single-flight and a minimum interval', () => {
  it('gives concurrent calls the one sweep in flight', async () => {
    const { store, app, bothArrived } = fixture();
    let release!: () => void;
    store.hold = new Promise<void>((resolve) => { release = resolve; });
    const first = request(app).post('/sweep').then((r) => r);
    const again = request(app).post('/sweep').then((r) => r);
    await bothArrived;
    release();
    const [a, b] = await Promise.all([first, again]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.deepEqual(a.body, b.body);
    assert.equal(store.listed, 1, 'one sweep for both calls');
  });

  it('answers a call within minIntervalMs 429 with Retry-After, reads nothing, and logs it; sweeps again after', async () => {
    const { store, app, logger, advance } = fixture();
    assert.equal((await request(app).post('/sweep')).status, 200);
    advance(4_000);
    const early = await request(app).post('/sweep');
    assert.equal(early.status, 429);
    assert.equal(early.headers['retry-after'], '6');
    assert.match(early.text, /^a sweep ran less than its minimum interval ago; nothing was done/);
    assert.equal(store.listed, 1, 'the early call started no sweep');
    assert.ok(logger.lines.some((l) => l.message.startsWith('sweep not started') && l.fields?.retryInMs === 6_000));
    advance(6_000);
    assert.equal((await request(app).post('/sweep')).status, 200);
    assert.equal(store.listed, 2);
  });

  it('takes minIntervalMs: 0 to turn the interval off, and refuses a bad value', async () => {
    const { store, app } = fixture(0);
    assert.equal((await request(app).post('/sweep')).status, 200);
    assert.equal((await request(app).post('/sweep')).status, 200);
    assert.equal(store.listed, 2);
    const locker = new Locker({ store: new MemoryStore(), authenticate: false });
    for (const bad of [-1, 1.5, Number.NaN, '10'] as unknown as number[]) {
      assert.throws(() => locker.sweepHandler({ minIntervalMs: bad }), (e: unknown) => e instanceof ConfigError && /minIntervalMs/.test(e.message), String(bad));
    }
  });
});

/**
 * `step/lease.ts` on a fake clock (its `Timers` injected): renewal every `leaseDuration / 3`, the
 * proof window (the lease is given up when no write proved it held for `leaseDuration` minus a
 * sixth), the loss to another attempt, the request's time limit and `leaseTimeout`, and the grace
 * a stopped handler has. The lease writes to the real in-memory store; its faults are injected
 * through the store's `fault` hook. The wall clock (`clock`, the lock's `lock_ts`) follows the fake one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Key } from '@google-cloud/datastore';
import { parseOptions, type LockerOptions } from '../../src/config/options';
import { settingsOf } from '../../src/config/settings';
import { buildParts } from '../../src/parts';
import type { LockerEvents } from '../../src/events/events';
import { Lease, LEASE_SETTINGS, proofWindow } from '../../src/step/lease';
import { MemoryStore, type MemoryStoreOperation } from '../../src/store/memory/store';
import { readLock } from '../../src/rules/lock-fields';
import { LeaseLostError, LeaseTimeoutError, RequestTimeoutError, ShutdownError, StoreUnavailableError } from '../../src/errors/errors';
import { StepState } from '../../src/types';
import { FakeTimers } from '../support/fake-timers';
import { keys, MemoryLogger } from '../support/task-app';

const LEASE = 3_000; // renewals every 1,000 ms; proof window 2,500 ms
const RENEW = LEASE / 3;
const WALL = Date.UTC(2026, 0, 1);

interface Rig {
  lease: Lease;
  timers: FakeTimers;
  store: MemoryStore;
  key: Key;
  logger: MemoryLogger;
  /** Every `lost` and `timedOut` event. */
  events: string[];
  /** Compare-and-swaps the store was asked for (renewals and other writes). */
  writes: () => number;
  /** While true, every compare-and-swap fails as an outage would. */
  failing: { on: boolean };
  /** The stored `lock_ts`, as ms after the rig's start. */
  stamp(): Promise<number>;
}

async function rig(options: Partial<LockerOptions> = {}): Promise<Rig> {
  const timers = new FakeTimers();
  const failing = { on: false };
  let writes = 0;
  const store = new MemoryStore({
    fault: (op: MemoryStoreOperation) => {
      if (op !== 'replace') return undefined;
      writes++;
      return failing.on ? new StoreUnavailableError('simulated outage: connection refused') : undefined;
    },
  });
  const logger = new MemoryLogger();
  const config = parseOptions({ store, logger, authenticate: false, leaseDuration: LEASE, clock: () => WALL + timers.now(), contention: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 }, ...options });
  const emitter = new EventEmitter<LockerEvents>();
  const events: string[] = [];
  emitter.on('lost', () => events.push('lost'));
  emitter.on('timedOut', () => events.push('timedOut'));
  const parts = buildParts(config, Promise.resolve(), emitter);
  const key = keys.key(['Counter', `lease-${Math.random().toString(36).slice(2)}`]);
  await store.transaction(async (tx) => {
    tx.put(key, { count: 0, lock_ts: new Date(WALL), lock_req: 'a1', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled }, []);
  });
  const snapshot = await store.read(key);
  assert.ok(snapshot);
  const lease = new Lease({ ...parts, config: settingsOf(config, LEASE_SETTINGS) }, key, 1, 'a1', snapshot, undefined, timers);
  const stamp = async (): Promise<number> => {
    const props = await store.get(key);
    return readLock(props!).ts!.getTime() - WALL;
  };
  return { lease, timers, store, key, logger, events, writes: () => writes, failing, stamp };
}

/** The lease's loss, read afresh (a getter: it changes as the clock moves). */
function lost(lease: Lease): LeaseLostError | undefined {
  return lease.lost;
}

/** Waits (real time, bounded) for `check`: a write that meets contention is retried after a real backoff of a few ms. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
}

describe('a lease on a fake clock', () => {
  it('renews every leaseDuration / 3, never sooner, and stays held while renewals succeed', async () => {
    const r = await rig();
    r.lease.start();
    await r.timers.advance(RENEW - 1);
    assert.equal(r.writes(), 0, 'no renewal before leaseDuration / 3');
    assert.equal(await r.stamp(), 0);
    await r.timers.advance(1);
    assert.equal(r.writes(), 1, 'one renewal at leaseDuration / 3');
    assert.equal(await r.stamp(), RENEW, 'the renewal wrote the time it was made');
    await r.timers.advance(9 * RENEW);
    assert.equal(r.writes(), 10, 'one renewal per leaseDuration / 3');
    assert.equal(await r.stamp(), 10 * RENEW);
    assert.equal(lost(r.lease), undefined, 'still held, long past the proof window');
    assert.equal(r.lease.signal.aborted, false);
    await r.lease.close();
    await r.timers.advance(10 * RENEW);
    assert.equal(r.writes(), 10, 'no renewal after close()');
    assert.deepEqual(r.timers.dueIn(), [], 'close() leaves no timer');
  });

  it('a pause delays the next renewal without restarting its cadence', async () => {
    const r = await rig();
    r.lease.start();
    await r.timers.advance(RENEW / 2);
    await r.lease.pause();
    await r.timers.advance(RENEW);
    assert.equal(r.writes(), 0, 'no renewal while paused');
    r.lease.resume();
    await r.timers.advance(1);
    assert.equal(r.writes(), 1, 'the renewal that came due during the pause goes at once on resume');
    await r.timers.advance(RENEW - 1);
    assert.equal(r.writes(), 1);
    await r.timers.advance(1);
    assert.equal(r.writes(), 2, 'the next one a full period after it');
    await r.lease.close();
  });

  it('gives the lease up when no renewal succeeded for the proof window, not a millisecond sooner', async () => {
    const r = await rig();
    const window = proofWindow(LEASE);
    assert.equal(window, 2_500);
    r.lease.start();
    r.failing.on = true;
    await r.timers.advance(window - 1);
    assert.equal(r.writes(), 2, 'two renewals were tried and failed');
    assert.ok(r.logger.has('lease renewal failed; retrying at the next tick'));
    assert.equal(lost(r.lease), undefined, 'held until the window closes');
    assert.equal(r.lease.signal.aborted, false);
    await r.timers.advance(1);
    assert.ok(lost(r.lease) instanceof LeaseLostError, 'given up at the end of the window');
    assert.match(lost(r.lease)?.message ?? '', /no renewal succeeded for 2500 ms/);
    assert.equal(r.lease.signal.reason, lost(r.lease), 'the handler\'s signal aborts with it');
    assert.deepEqual(r.events, ['lost']);
    const tried = r.writes();
    r.failing.on = false;
    await r.timers.advance(10 * RENEW);
    assert.equal(r.writes(), tried, 'no renewal after the lease was given up');
    await assert.rejects(r.lease.update((lock) => lock), LeaseLostError, 'no write of the attempt goes through after');
    assert.deepEqual(r.events, ['lost'], 'reported once');
  });

  it('a successful renewal starts the proof window again', async () => {
    const r = await rig();
    r.lease.start();
    await r.timers.advance(RENEW); // renewed at 1,000: proven
    assert.equal(r.writes(), 1);
    r.failing.on = true;
    await r.timers.advance(proofWindow(LEASE) - 1); // 3,499
    assert.equal(lost(r.lease), undefined, 'held: the window runs from the last renewal, not from the start');
    await r.timers.advance(1);
    assert.ok(lost(r.lease) instanceof LeaseLostError);
  });

  it('is lost at the first renewal after another attempt overwrote it, and writes nothing over it', async () => {
    const r = await rig();
    r.lease.start();
    const snapshot = await r.store.read(r.key);
    await r.store.replaceIfUnchanged(r.key, snapshot!, { ...snapshot!.properties, lock_req: 'b2', lock_ts: new Date(WALL + 10) }, []);
    await r.timers.advance(RENEW - 1);
    assert.equal(lost(r.lease), undefined, 'nothing noticed before the renewal');
    await r.timers.advance(1);
    await until(() => lost(r.lease) !== undefined);
    assert.ok(lost(r.lease) instanceof LeaseLostError);
    assert.match(lost(r.lease)?.message ?? '', /lost its lease .* to another attempt/);
    assert.deepEqual(r.events, ['lost']);
    assert.equal(readLock((await r.store.get(r.key))!).req, 'b2', 'the other attempt\'s lease stands');
  });

  it('is stopped at the request\'s time limit, and a handler still running is given up after its grace', async () => {
    const r = await rig({ requestTimeout: 10_000 }); // margin 1 s: stopped at 9,000 ms, 500 ms of grace
    r.lease.start();
    let settled: boolean | undefined;
    void r.lease.race(new Promise(() => {})).then((ranOn) => { settled = ranOn; });
    await r.timers.advance(9_000 - 1);
    assert.equal(r.lease.interrupted(), undefined, 'running before the limit');
    await r.timers.advance(1);
    assert.ok(r.lease.interrupted() instanceof RequestTimeoutError, 'stopped at requestTimeout minus the margin');
    assert.ok(r.lease.signal.reason instanceof RequestTimeoutError);
    await r.timers.advance(500 - 1);
    assert.equal(settled, undefined, 'the handler has its grace');
    const renewed = await r.stamp();
    assert.ok(renewed >= 9_000, `renewal goes on during the grace (lock_ts at ${renewed} ms)`);
    await r.timers.advance(1);
    assert.equal(settled, true, 'given up at the end of the grace');
    assert.equal(lost(r.lease), undefined, 'a stop is not a loss');
    await r.lease.close();
  });

  it('a handler that returns within its grace is not given up', async () => {
    const r = await rig();
    r.lease.start();
    let returned!: () => void;
    let settled: boolean | undefined;
    void r.lease.race(new Promise<void>((resolve) => { returned = resolve; })).then((ranOn) => { settled = ranOn; });
    r.lease.interrupt('shutdown', 1_500);
    assert.ok(r.lease.signal.reason instanceof ShutdownError, 'the signal aborts at once');
    await r.timers.advance(1_200);
    assert.equal(await r.stamp(), RENEW, 'renewal went on after the stop');
    returned();
    await r.timers.advance(1);
    assert.equal(settled, false);
    await r.timers.advance(1_000);
    assert.equal(settled, false, 'the grace ending later changes nothing');
    await r.lease.close();
  });

  it('times out at leaseTimeout when that comes before the request\'s limit', async () => {
    const r = await rig({ leaseTimeout: 4_000 });
    r.lease.start();
    await r.timers.advance(4_000 - 1);
    assert.equal(r.lease.signal.aborted, false);
    await r.timers.advance(1);
    assert.ok(r.lease.signal.reason instanceof LeaseTimeoutError);
    assert.deepEqual(r.events, ['timedOut']);
    const tried = r.writes();
    await r.timers.advance(5 * RENEW);
    assert.equal(r.writes(), tried, 'no renewal after the timeout');
  });
});

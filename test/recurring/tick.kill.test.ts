/**
 * SIGKILL in the middle of a tick that starts 300 schedules' runs, then a process that ticks again:
 * every run started exactly once and ran once. A child process (`support/tick-crash-app.ts`)
 * ticks on each Datastore emulator and kills itself just before the Nth lookup, commit or
 * task of the tick (N random, printed), at the seams: the store's generated client and the queue.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { DatastoreStore } from '../../src/store/datastore/store';
import { crashAppEnd, runCrashApp, stopCrashApp, untilCrashApp } from '../support/crash-app-run';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { readAll } from '../chain/schedule-many-suite';
import { readSchedule, scheduleKey } from '../../src/recurring/schedule-record';
import { StepState } from '../../src/types';
import { onePoint, pointsToRun } from '../support/test-scale';

const SCHEDULES = 300;
const START = Date.UTC(2026, 0, 5, 9, 59, 0);
const TICK = Date.UTC(2026, 0, 5, 10, 0, 5);
const EMULATORS = [
  { name: 'the Datastore emulator', env: 'legacy', datastore: legacyDatastore() },
  { name: 'the Firestore emulator in Datastore mode', env: 'firestore', datastore: firestoreDatastore() },
] as const;
const stores = EMULATORS.map((e) => new DatastoreStore(e.datastore));
after(() => Promise.all(stores.map((s) => s.shutdown())));

/** Kill points: the tick's lookups (due records read, plans, settles), its commits (plans, the kickoff's, settles) and its tasks. */
const POINTS = [
  { at: 'lookup', range: [1, 39] },
  { at: 'commit', range: [1, 38] },
  { at: 'enqueue', range: [1, SCHEDULES] },
] as const;

// The two emulators' runs go side by side (each kill point writes a namespace of its own).
describe('SIGKILL during a tick, on both emulators', { concurrency: true }, () => EMULATORS.forEach((emulator, e) => describe(`SIGKILL during a tick of 300 due schedules, then another tick (${emulator.name})`, { concurrency: 1 }, () => {
  const datastore = emulator.datastore;
  const store = stores[e]!;
  // On the Firestore emulator a killed process's transactions keep their locks until they time out
  // (about a minute, which the next ticks wait out): one kill point per run there, chosen at random.
  // On the legacy emulator, `npm test` draws one point too, and `npm run test:long` runs all three.
  const points = emulator.env === 'firestore' ? onePoint(POINTS) : pointsToRun(POINTS);
  for (const point of points) {
    const n = point.range[0] + Math.floor(Math.random() * (point.range[1] - point.range[0] + 1));
    it(`killed before ${point.at} #${n}: every schedule's 10:00 run started once and ran once`, { timeout: 300_000 }, async () => {
      const namespace = uniqueNamespace(`tick-kill-${point.at}`);
      const env = { NAMESPACE: namespace, SCHEDULES: String(SCHEDULES), START: String(START), TICK: String(TICK), EMULATOR: emulator.env };
      const first = runCrashApp('test/support/tick-crash-app.ts', { ...env, KILL_AT: point.at, KILL_AFTER: String(n) });
      const ended = await crashAppEnd(first, 120_000);
      if (!ended) await stopCrashApp(first);
      assert.equal(ended?.signal, 'SIGKILL', `the app died at ${point.at} #${n}\n${first.out.join('').slice(-3000)}`);

      // The next process ticks a few seconds later: the runs the killed tick planned are pending, and start once.
      const second = runCrashApp('test/support/tick-crash-app.ts', { ...env, START: String(TICK + 2_000), TICK: String(TICK + 5_000) });
      try {
        const keys = Array.from({ length: SCHEDULES }, (_, i) => datastore.key({ namespace, path: ['Report', `report-${i}@2026-01-05T10:00:00.000Z`] }));
        const props = await untilCrashApp('every run complete', async () => {
          const all = await readAll(store, keys);
          return all.every((p) => p?.lock_state === StepState.complete) ? all : undefined;
        }, second, 240_000, 500);
        const runs = props.map((p) => p?.runs);
        assert.deepEqual(runs.filter((r) => r !== 1), [], 'every run ran exactly once');
        // A run starts through its kickoff, and its schedule's record lists it `pending` until a tick
        // settles it. On the Firestore emulator the killed tick's transaction keeps the records it
        // read locked for 60 s, so that settle can fail and wait for a later tick (the sweeps tick
        // every 300 ms): wait for the settles (the killed lock's 60 s and more), then check each record.
        const scheduleKeys = Array.from({ length: SCHEDULES }, (_, i) => scheduleKey(`report-${i}`, namespace));
        const readRecords = async () => (await readAll(store, scheduleKeys)).map(readSchedule);
        const records = await untilCrashApp('every run settled on its schedule', async () => {
          const all = await readRecords();
          return all.every((r) => r?.pending.length === 0) ? all : undefined;
        }, second, 150_000, 500).catch(readRecords); // not settled in time: the assertions below say which record kept what
        for (const [i, r] of records.entries()) {
          assert.equal(r?.next?.toISOString(), '2026-01-05T11:00:00.000Z', `report-${i}: its next tick advanced`);
          assert.deepEqual(r?.pending, [], `report-${i}: no run left pending`);
          assert.equal(r?.started, 1, `report-${i}: one run counted`);
        }
      } finally {
        await stopCrashApp(second);
      }
    });
  }
})));

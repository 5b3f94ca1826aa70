// The test files that take longest, longest first: each file's process from start to end, as
// `npm test` printed them on 2026-11-28 (two lanes at 08a9445, the kill tests again after their
// timers were cleared). scripts/test.mjs queues these first, so that the run does not end with one
// long file running alone while the other lanes idle. A file not listed is queued after them, in
// path order; a stale or missing entry costs only time, never a test.
export const SLOW_FIRST = [
  'test/fanout/fanout-big.legacy.long.test.ts', // in `npm run test:long` only: 10,000 children
  'test/fanout/fanout.firestore.long.test.ts', // in `npm run test:long` only
  'test/fanout/fanout.legacy.test.ts',
  'test/fanout/fanout.firestore-native.long.test.ts', // in `npm run test:long` only: 210-310 s alone on 2026-11-29 (its own Native-mode emulator)
  'test/promises/model.test.ts',
  'test/store/store.firestore.test.ts',
  'test/chain/sweep.recovery.test.ts',
  'test/fanout/fanout.memory.test.ts',
  'test/fanout/fanout.kill.test.ts',
  'test/promises/chaos.test.ts',
  'test/ops/bulk.datastore.test.ts',
  'test/recurring/recurring.datastore.test.ts',
  'test/step/handle.datastore.test.ts',
  'test/promises/faults.datastore.test.ts',
  'test/recurring/tick.kill.test.ts',
  'test/promises/model.datastore.test.ts',
  'test/package/pack.test.ts',
  'test/chain/schedule-many.kill.test.ts',
  'test/ops/runs.datastore.test.ts',
  'test/package/bench.test.ts',
  'test/store/store.errors.test.ts',
  'test/docs/docs.examples.test.ts',
  'test/example-app/example-app.test.ts',
  'test/store/store.datastore.test.ts',
  'test/ops/bulk.kill.test.ts',
  'test/docs/guide.cloud-run.test.ts',
  'test/step/kill-points.test.ts',
  // Last of the slow ones, so that the two 10,000-child runs overlap as little as they can (side by
  // side, each emulator answered the join's lookups in over 5 s).
  'test/fanout/fanout-big.firestore.long.test.ts',
];

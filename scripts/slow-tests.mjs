// The test files that take longest, longest first (from the slowest-files tables of the CI runs at
// aa2450d and 62b1c64; a suite's time is shared by the files that run it). scripts/test.mjs starts
// these first within their group, so that a group does not end with one long file running alone
// while the runner's other slot idles. A file not listed starts after them, in path order; a stale
// or missing entry costs only time, never a test.
export const SLOW_FIRST = [
  'test/fanout/fanout.legacy.test.ts',
  'test/fanout/fanout.kill.test.ts',
  'test/fanout/fanout.firestore.test.ts',
  'test/chain/schedule-many.kill.test.ts',
  'test/chain/sweep.recovery.test.ts',
  'test/chain/schedule-many.datastore.test.ts',
  'test/promises/chaos.test.ts',
  'test/chain/schedule-many.firestore.test.ts',
  'test/promises/model.test.ts',
  'test/store/store.datastore.test.ts',
  'test/promises/faults.datastore.test.ts',
  'test/package/pack.test.ts',
  'test/package/bench.test.ts',
  'test/recurring/tick.kill.test.ts',
  'test/store/store.errors.test.ts',
  'test/promises/model.datastore.test.ts',
  'test/recurring/recurring.datastore.test.ts',
  'test/ops/runs.datastore.test.ts',
  'test/ops/bulk.datastore.test.ts',
  'test/ops/bulk.kill.test.ts',
  'test/store/store.firestore.test.ts',
];

// The body of `npm test`: runs every test/**/*.test.ts with node's test runner, two files side by
// side (TEST_CONCURRENCY=1 runs one at a time), in groups of 20 files in path order
// (TEST_GROUP_SIZE), the slowest of a group first (scripts/slow-tests.mjs), each group on both
// Datastore emulators started for it, and exits with 1 when
// any group failed. Each file works in a Datastore project of its own on the shared emulators
// (test/support/own-project.mjs), so files side by side never see each other's data. Arguments
// filter the files by substring: `node scripts/test.mjs store` runs only the files whose path
// contains "store". Work several files would repeat is done once per run (LOCKER_TEST_CACHE).
// `--long` (`npm run test:long`, which CI runs after `npm test`) runs only the files that import
// test/support/test-scale.ts, at full size (LOCKER_TEST_LONG=1): every kill point, thousands of chains.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runWithEmulators } from './emulators.mjs';
import { slowestFiles } from './test-timings.mjs';
import { SLOW_FIRST } from './slow-tests.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Every `*.test.ts` under `dir`, as paths relative to the repository root. */
function findTests(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : findTests(path);
    return entry.isFile() && entry.name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

/**
 * Files per group: each group of files runs on emulators started for it and stopped after it. The
 * legacy Datastore emulator slows down over a long run (measured: 500-entity commits in a fresh
 * project took 1-5 s on one that had served 30 minutes of this suite, 0.2-0.6 s on a fresh one
 * beside it under the same load; it is not the data it holds, nor its heap), enough for calls to
 * hit their 5 s deadline; a group of this many files keeps each pair of emulators young.
 */
const DEFAULT_GROUP_SIZE = 20;

async function main() {
  const long = process.argv.includes('--long');
  const filters = process.argv.slice(2).filter((a) => a !== '--long');
  const files = findTests(join(root, 'test'))
    .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
    .filter((file) => !long || scales(file))
    .sort();
  if (long) process.env.LOCKER_TEST_LONG = '1';
  if (files.length === 0) {
    console.error(`no test files match ${filters.map((f) => JSON.stringify(f)).join(', ')}`);
    return 1;
  }
  const concurrency = Number(process.env.TEST_CONCURRENCY || 2);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    console.error(`TEST_CONCURRENCY must be a whole number of files at a time, 1 or more; got ${JSON.stringify(process.env.TEST_CONCURRENCY)}`);
    return 1;
  }
  const groupSize = Number(process.env.TEST_GROUP_SIZE ?? DEFAULT_GROUP_SIZE);
  if (!Number.isInteger(groupSize) || groupSize < 1) {
    console.error(`TEST_GROUP_SIZE must be a whole number of files, 1 or more; got ${JSON.stringify(process.env.TEST_GROUP_SIZE)}`);
    return 1;
  }
  const timings = pathToFileURL(join(root, 'scripts', 'test-timings.mjs')).href;
  const ownProject = pathToFileURL(join(root, 'test', 'support', 'own-project.mjs')).href;
  const runnerArgs = ['--import', 'tsx', '--import', ownProject, '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${timings}`, '--test-reporter-destination=stdout'];
  process.chdir(root);
  // What several files would each compute the same way (the documentation's type-check: see
  // test/support/doc-typecheck.ts) is kept here for the run, and removed with it.
  const cache = mkdtempSync(join(tmpdir(), 'datastore-locker-test-'));
  process.env.LOCKER_TEST_CACHE = cache;
  const groups = [];
  for (let i = 0; i < files.length; i += groupSize) groups.push(files.slice(i, i + groupSize));
  const failed = [];
  try {
    for (const [n, group] of groups.entries()) {
      if (groups.length > 1) console.log(`\n== test group ${n + 1} of ${groups.length}: ${group.length} files, ${group[0]} .. ${group.at(-1)}, on emulators of its own ==\n`);
      const code = await runWithEmulators(process.execPath, [...runnerArgs, ...startSlowFirst(group)]);
      if (code !== 0) failed.push(n + 1);
    }
    printTimings(cache);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
  if (groups.length > 1) {
    console.log(failed.length === 0
      ? `\nall ${groups.length} test groups passed (${files.length} files)`
      : `\ntest groups that failed: ${failed.join(', ')} of ${groups.length} (search the output for "== test group")`);
  }
  return failed.length === 0 ? 0 : 1;
}

/** Whether a test file has a long version: it imports test/support/test-scale.ts. */
function scales(file) {
  return /from '\.\.\/support\/test-scale'/.test(readFileSync(join(root, file), 'utf8'));
}

/** The group's files with the slow ones first, longest first (`SLOW_FIRST`); the rest after them, in path order. */
function startSlowFirst(group) {
  const rank = (file) => {
    const i = SLOW_FIRST.indexOf(file.split('\\').join('/'));
    return i === -1 ? SLOW_FIRST.length : i;
  };
  return [...group].sort((a, b) => rank(a) - rank(b)); // stable: the rest keep their path order
}

/** Prints the slowest files of the whole run, from what the timings reporter recorded in `cache`. */
function printTimings(cache) {
  let text = '';
  try {
    text = readFileSync(join(cache, 'timings.jsonl'), 'utf8');
  } catch {
    return; // no file reported a time (every group failed to start)
  }
  const perFile = new Map();
  for (const line of text.split('\n').filter(Boolean)) {
    const { file, ms } = JSON.parse(line);
    perFile.set(file, (perFile.get(file) ?? 0) + ms); // a suite shared by files of several groups adds up
  }
  console.log(slowestFiles(perFile, root));
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);

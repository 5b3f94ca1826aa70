// The body of `npm test`: starts both Datastore emulators, then runs every test/**/*.test.ts with
// node's test runner, one file at a time (TEST_CONCURRENCY=2 runs two side by side), and exits with
// the runner's code. Each file works in a Datastore project of its own on the shared emulators
// (test/support/own-project.mjs), so files side by side never see each other's data. Arguments
// filter the files by substring: `node scripts/test.mjs store` runs only the files whose path
// contains "store". Work several files would repeat is done once per run (LOCKER_TEST_CACHE).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runWithEmulators } from './emulators.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Every `*.test.ts` under `dir`, as paths relative to the repository root. */
function findTests(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : findTests(path);
    return entry.isFile() && entry.name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

async function main() {
  const filters = process.argv.slice(2);
  const files = findTests(join(root, 'test'))
    .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
    .sort();
  if (files.length === 0) {
    console.error(`no test files match ${filters.map((f) => JSON.stringify(f)).join(', ')}`);
    return 1;
  }
  const concurrency = Number(process.env.TEST_CONCURRENCY ?? 1);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    console.error(`TEST_CONCURRENCY must be a whole number of files at a time, 1 or more; got ${JSON.stringify(process.env.TEST_CONCURRENCY)}`);
    return 1;
  }
  const timings = pathToFileURL(join(root, 'scripts', 'test-timings.mjs')).href;
  const ownProject = pathToFileURL(join(root, 'test', 'support', 'own-project.mjs')).href;
  const args = ['--import', 'tsx', '--import', ownProject, '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${timings}`, '--test-reporter-destination=stdout', ...files];
  process.chdir(root);
  // What several files would each compute the same way (the documentation's type-check: see
  // test/support/doc-typecheck.ts) is kept here for the run, and removed with it.
  const cache = mkdtempSync(join(tmpdir(), 'datastore-locker-test-'));
  process.env.LOCKER_TEST_CACHE = cache;
  try {
    return await runWithEmulators(process.execPath, args);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
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

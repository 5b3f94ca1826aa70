// The body of `npm test`: runs every test/**/*.test.ts with node's test runner, each file in a
// process of its own, in two lanes (TEST_CONCURRENCY=N for N; 1 runs one file at a time). A lane runs
// one file at a time on both Datastore emulators of its own, started again every few minutes
// (scripts/test-lanes.mjs), and takes the next file as soon as it is free: the slowest files first
// (scripts/slow-tests.mjs), the rest in path order. Exits with 1 when any file failed. Each file
// works in a Datastore project of its own (test/support/own-project.mjs). Arguments
// filter the files by substring: `node scripts/test.mjs store` runs only the files whose path
// contains "store". Work several files would repeat is done once per run (LOCKER_TEST_CACHE). The
// light files (no emulator, no child process, no browser, not among the slow ones) run 12 to a process
// (TEST_BATCH_SIZE=N for N; 1 runs each alone), which saves each one its process's start; a process
// of them that fails has its files run again one at a time, whose own results count.
// `--long` (`npm run test:long`, which CI runs after `npm test`) runs only the files that import
// test/support/test-scale.ts, at full size (LOCKER_TEST_LONG=1), one file at a time: every kill point, thousands of chains;
// and the files named `*.long.test.ts`, which only it runs.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runInLanes } from './test-lanes.mjs';
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

async function main() {
  const long = process.argv.includes('--long');
  const filters = process.argv.slice(2).filter((a) => a !== '--long');
  const files = findTests(join(root, 'test'))
    .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
    .filter((file) => (long ? scales(file) || longOnly(file) : !longOnly(file)))
    .sort();
  if (long) process.env.LOCKER_TEST_LONG = '1';
  if (files.length === 0) {
    console.error(`no test files match ${filters.map((f) => JSON.stringify(f)).join(', ')}`);
    return 1;
  }
  if (!Number.isInteger(BATCH_SIZE) || BATCH_SIZE < 1) {
    console.error(`TEST_BATCH_SIZE must be a whole number of files a process, 1 or more; got ${JSON.stringify(process.env.TEST_BATCH_SIZE)}`);
    return 1;
  }
  // `--long` runs one file at a time unless told otherwise: its files are the heaviest (10,000-child
  // fan-outs, 5,000-item kills), and side by side on two cores they ran past their own time limits
  // (the clean-clone CI of 2026-11-29, 06:47-07:07: the Native-mode fan-out's 250-child join and a
  // 5,000-item kill, each beside a 10,000-child run).
  const concurrency = Number(process.env.TEST_CONCURRENCY || (long ? 1 : 2));
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    console.error(`TEST_CONCURRENCY must be a whole number of files at a time, 1 or more; got ${JSON.stringify(process.env.TEST_CONCURRENCY)}`);
    return 1;
  }
  const timings = pathToFileURL(join(root, 'scripts', 'test-timings.mjs')).href;
  const ownProject = pathToFileURL(join(root, 'test', 'support', 'own-project.mjs')).href;
  const runnerArgs = ['--import', 'tsx', '--import', ownProject, '--test', '--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${timings}`, '--test-reporter-destination=stdout'];
  process.chdir(root);
  // What several files would each compute the same way (the documentation's type-check: see
  // test/support/doc-typecheck.ts) is kept here for the run, and removed with it.
  const cache = mkdtempSync(join(tmpdir(), 'datastore-locker-test-'));
  process.env.LOCKER_TEST_CACHE = cache;
  const started = Date.now();
  let run;
  let batches = new Map();
  try {
    let jobs;
    ({ jobs, batches } = batched(startSlowFirst(files), cache));
    run = await runInLanes({ files: jobs, batches, lanes: concurrency, command: process.execPath, args: runnerArgs, env: process.env });
    printTimings(cache);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
  const failed = run.results.filter((r) => r.code !== 0).map((r) => r.file).sort();
  console.log(laneReport(run, Date.now() - started));
  if (failed.length > 0) console.log(`test files that failed (each one's output follows its line "── FILE: FAILED …"):\n${failed.map((f) => `  ${f}`).join('\n')}`);
  for (const r of run.results.filter((x) => x.digest !== undefined).sort((a, b) => a.file.localeCompare(b.file))) console.log(`\n── why ${r.file} failed (the end of its output) ──\n${r.digest}`);
  if (run.notRun.length > 0) console.log(`test files never run (no lane could start its emulators):\n${run.notRun.map((f) => `  ${f}`).join('\n')}`);
  if (run.batchesRunAgain.length > 0) console.log(`files run together that failed and then ran again one at a time: ${run.batchesRunAgain.map((b) => batches.get(b).length).join(', ')} files in ${run.batchesRunAgain.length} process(es) (see "each runs again alone" above)`);
  if (failed.length === 0 && run.notRun.length === 0) console.log(`all ${files.length} test files passed`);
  return failed.length === 0 && run.notRun.length === 0 ? 0 : 1;
}

/** The run's wall time, each lane's share, and the files that took longest (each file's process, start to end). */
function laneReport(run, wallMs) {
  const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const lanes = run.lanes.map((l, i) => `  lane ${i + 1}: ${l.files} files, ${s(l.busyMs)} running them, emulators started ${l.emulatorStarts} time(s)`);
  const slowest = [...run.results].sort((a, b) => b.ms - a.ms).slice(0, 20).map((r) => `  ${s(r.ms).padStart(9)}  ${r.file}`);
  return `\n${run.results.length} test files in ${run.lanes.length} lane(s), ${s(wallMs)} in all:\n${lanes.join('\n')}\nlongest files (each file's process, start to end):\n${slowest.join('\n')}\n`;
}

/** Whether a test file has a long version: it imports test/support/test-scale.ts. */
function scales(file) {
  return /from '\.\.\/support\/test-scale'/.test(readFileSync(join(root, file), 'utf8'));
}

/** Whether a test file runs only in `npm run test:long`: it is named `*.long.test.ts`. */
function longOnly(file) {
  return file.endsWith('.long.test.ts');
}

/** How many light files share one process (see `batched`): 12, or TEST_BATCH_SIZE (1: each alone). */
const BATCH_SIZE = Number(process.env.TEST_BATCH_SIZE || 12);

/**
 * The run's jobs: the light files (`light`) in processes of BATCH_SIZE files each, after the
 * others, and every other file alone. Starting a file's process costs about 1.5 s of CPU (node,
 * tsx, the runner, the library's modules): 20 light files took 31 s of CPU one by one and 5 s in
 * one process. Each batch is a file in `cache` that imports its files; node's test runner runs their
 * tests one file after another, as it would one file's. A batch that fails has its files run again
 * one at a time (scripts/test-lanes.mjs), so each file's result is its own.
 */
function batched(files, cache) {
  const light = BATCH_SIZE > 1 ? files.filter((file) => isLight(file)) : [];
  const jobs = files.filter((file) => !light.includes(file));
  const batches = new Map();
  for (let i = 0; i < light.length; i += BATCH_SIZE) {
    const members = light.slice(i, i + BATCH_SIZE);
    if (members.length === 1) {
      jobs.push(members[0]); // alone, as it would be anyway
      continue;
    }
    const entry = join(cache, `batch-${batches.size + 1}.test.mjs`);
    writeFileSync(entry, members.map((file) => `import ${JSON.stringify(pathToFileURL(join(root, file)).href)};\n`).join(''));
    batches.set(entry, members);
    jobs.push(entry);
  }
  return { jobs, batches };
}

/**
 * Whether a file may share a process with others: it is not among the slow ones (SLOW_FIRST, which
 * start first, each alone), and neither it nor any test module it imports (followed through relative
 * imports under test/) reaches the emulators (files on one project would sweep each other's records),
 * starts processes, or drives a browser.
 */
function isLight(file) {
  if (SLOW_FIRST.includes(file.split('\\').join('/')) || /\.browser\./.test(file)) return false;
  const seen = new Set();
  const heavy = (path) => {
    if (seen.has(path)) return false;
    seen.add(path);
    const text = readFileSync(path, 'utf8');
    if (/from '(node:)?child_process'|support\/(emulator|namespaced-store|firestore-native)'|emulators\.mjs/.test(text)) return true;
    for (const [, spec] of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const target = resolve(dirname(path), spec);
      if (!target.startsWith(join(root, 'test'))) continue; // the library's own modules are no test's doing
      const found = [`${target}.ts`, `${target}.mjs`, join(target, 'index.ts')].find((candidate) => existsSync(candidate));
      if (found !== undefined && heavy(found)) return true;
    }
    return false;
  };
  return !heavy(join(root, file));
}

/** The files with the slow ones first, longest first (`SLOW_FIRST`); the rest after them, in path order. */
function startSlowFirst(files) {
  const rank = (file) => {
    const i = SLOW_FIRST.indexOf(file.split('\\').join('/'));
    return i === -1 ? SLOW_FIRST.length : i;
  };
  return [...files].sort((a, b) => rank(a) - rank(b)); // stable: the rest keep their path order
}

/** Prints the slowest files of the whole run, from what the timings reporter recorded in `cache`. */
function printTimings(cache) {
  let text = '';
  try {
    text = readFileSync(join(cache, 'timings.jsonl'), 'utf8');
  } catch {
    return; // no file reported a time (none ran)
  }
  const perFile = new Map();
  for (const line of text.split('\n').filter(Boolean)) {
    const { file, ms } = JSON.parse(line);
    perFile.set(file, (perFile.get(file) ?? 0) + ms); // a suite shared by several files adds up
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

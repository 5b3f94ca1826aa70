// A reporter for node's test runner, added by scripts/test.mjs beside the spec reporter: it adds
// up how long each file's tests took (the sum of its top-level tests' durations; the runner names
// the file that defines a test, so a suite several test files run, such as test/fanout/fanout-suite.ts,
// counts for all of them) and appends
// one line per file to `timings.jsonl` in LOCKER_TEST_CACHE, where scripts/test.mjs reads them
// for the table of the slowest files it prints at the end of the run (the suite has a time budget
// of about 15 minutes). Without LOCKER_TEST_CACHE it prints the table itself.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

/** How many of the slowest files the table shows. */
const SHOWN = 15;

/** The table of the slowest files, from [file, ms] pairs. */
export function slowestFiles(perFile, root = process.cwd()) {
  const rows = [...perFile].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
  const prefix = root.endsWith('/') ? root : `${root}/`;
  const lines = rows.slice(0, SHOWN).map(([file, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file.startsWith(prefix) ? file.slice(prefix.length) : file}`);
  return `\nslowest test files (${rows.length} files, ${(total / 1000).toFixed(0)} s of tests in all):\n${lines.join('\n')}\n`;
}

/** Reads the runner's events; records (or prints) the time per file at the end. */
export default async function* testTimings(source) {
  const perFile = new Map();
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue;
    const file = event.data.file ?? '(unknown file)';
    perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  const cache = process.env.LOCKER_TEST_CACHE;
  if (cache === undefined) {
    yield slowestFiles(perFile);
    return;
  }
  appendFileSync(join(cache, 'timings.jsonl'), [...perFile].map(([file, ms]) => `${JSON.stringify({ file, ms })}\n`).join(''));
}

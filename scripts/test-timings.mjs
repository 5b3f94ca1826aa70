// A reporter for node's test runner, added by scripts/test.mjs beside the spec reporter: at the
// end of the run it prints how long each test file's tests took (the sum of its top-level tests'
// durations), slowest first, so the suite's time budget (about 15 minutes) can be kept.
const SHOWN = 15;

/** Reads the runner's events; yields one table at the end. */
export default async function* testTimings(source) {
  const perFile = new Map();
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue;
    const file = event.data.file ?? '(unknown file)';
    perFile.set(file, (perFile.get(file) ?? 0) + (event.data.details?.duration_ms ?? 0));
  }
  const rows = [...perFile].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
  const cwd = process.cwd() + '/';
  const lines = rows.slice(0, SHOWN).map(([file, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file.startsWith(cwd) ? file.slice(cwd.length) : file}`);
  yield `\nslowest test files (${rows.length} files, ${(total / 1000).toFixed(0)} s of tests in all):\n${lines.join('\n')}\n`;
}

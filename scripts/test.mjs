// The body of `npm test`: starts both Datastore emulators, then runs every test/**/*.test.ts with
// node's test runner (one file at a time) and exits with the runner's code. Arguments filter the
// files by substring: `node scripts/test.mjs store` runs only the files whose path contains "store".
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
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
  const args = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', '--test-reporter-destination=stdout', ...files];
  process.chdir(root);
  return runWithEmulators(process.execPath, args);
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

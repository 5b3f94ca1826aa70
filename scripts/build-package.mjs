// Builds dist/ for packing and for installs from git (package.json's `prepack` and `prepare`).
//
//   node scripts/build-package.mjs           `prepare`: npm runs it after every plain `npm install`
//                                             or `npm ci` here, and in the clone it makes when a
//                                             user installs this package from git. tsc is
//                                             incremental (dist/.tsbuildinfo), so an up-to-date
//                                             dist/ costs a few seconds. A production install
//                                             (--omit=dev: no TypeScript) has nothing to build
//                                             with, and is told so instead of failing.
//   node scripts/build-package.mjs --clean   `prepack`: `npm pack` and `npm publish` build from
//                                             an empty dist/, so no file of a deleted source
//                                             ends up in the tarball.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const clean = process.argv.includes('--clean');

/** The path of TypeScript's compiler, or undefined when TypeScript is not installed. */
function findTsc() {
  try {
    return createRequire(`${root}package.json`).resolve('typescript/bin/tsc');
  } catch {
    return undefined;
  }
}

// `npm pack` and `npm publish` run `prepack` (a clean build) and then `prepare`: once is enough.
if (!clean && ['pack', 'publish'].includes(process.env.npm_command ?? '')) process.exit(0);

const tsc = findTsc();
if (tsc === undefined) {
  if (clean) {
    console.error('datastore-locker: packing needs the devDependencies (TypeScript): run `npm install` first');
    process.exit(1);
  }
  console.log('datastore-locker: TypeScript is not installed (a production install), dist/ is left as it is');
  process.exit(0);
}
if (clean) rmSync(`${root}dist`, { recursive: true, force: true });
const node = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
node([tsc, '-p', 'tsconfig.build.json']);
node(['scripts/esm-wrapper.mjs']);

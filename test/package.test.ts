// The built package as users load it: `require` and `import` through the exports map, one copy of
// every class (so instanceof works across both), and type declarations beside it.
// `npm test` builds dist/ before the tests run.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
const run = (args: string[]): string => execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' });

describe('the built package', () => {
  it('is built (run `npm run build` first)', () => {
    assert.ok(existsSync(join(root, 'dist', 'index.js')), 'dist/index.js');
    assert.ok(existsSync(join(root, 'dist', 'index.mjs')), 'dist/index.mjs');
    assert.ok(existsSync(join(root, 'dist', 'index.d.ts')), 'dist/index.d.ts');
  });

  it('serves require() and import, with the same classes', () => {
    const out = run(['--input-type=module', '-e', `
      import { createRequire } from 'node:module';
      import * as esm from 'datastore-locker';
      const cjs = createRequire(import.meta.url)('datastore-locker');
      const names = ['Locker', 'MemoryStore', 'DatastoreStore', 'LocalQueue', 'CloudTasksQueue', 'EmailAlerter', 'oidcAuthenticator', 'LeaseLostError'];
      console.log(JSON.stringify(names.map((n) => [n, typeof esm[n], esm[n] === cjs[n]])));
    `]);
    for (const [name, type, same] of JSON.parse(out) as Array<[string, string, boolean]>) {
      assert.equal(type, 'function', name);
      assert.equal(same, true, `${name} is one class for import and require`);
    }
  });

  it('declares the public types', () => {
    const dts = readFileSync(join(root, 'dist', 'index.d.ts'), 'utf8');
    for (const name of ['Locker', 'LockerOptions', 'TaskContext', 'Store', 'Queue', 'AlertEvent']) assert.match(dts, new RegExp(`\\b${name}\\b`));
  });
});

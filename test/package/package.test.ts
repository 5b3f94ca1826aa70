// The built package as users load it: `require` and `import` through the exports map, one copy of
// every class (so instanceof works across both), and type declarations beside it.
// `npm test` builds dist/ before the tests run.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import ts from 'typescript';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
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

  it('serves FirestoreStore from datastore-locker/firestore only: the main entry never loads @google-cloud/firestore', () => {
    const out = run(['-e', `
      const main = require('datastore-locker');
      const loadedByMain = Object.keys(require.cache).some((f) => f.includes('@google-cloud/firestore'));
      const sub = require('datastore-locker/firestore');
      const loadedBySub = Object.keys(require.cache).some((f) => f.includes('@google-cloud/firestore'));
      console.log(JSON.stringify({ inMain: 'FirestoreStore' in main, loadedByMain, loadedBySub, type: typeof sub.FirestoreStore }));
    `]);
    assert.deepEqual(JSON.parse(out), { inMain: false, loadedByMain: false, loadedBySub: true, type: 'function' });
    const esm = run(['--input-type=module', '-e', `
      import { createRequire } from 'node:module';
      import { FirestoreStore } from 'datastore-locker/firestore';
      console.log(JSON.stringify(FirestoreStore === createRequire(import.meta.url)('datastore-locker/firestore').FirestoreStore));
    `]);
    assert.equal(JSON.parse(esm), true, 'one class for import and require');
  });

  it('runs the built datastore-locker-indexes --firestore without loading @google-cloud/firestore', () => {
    const out = run(['-e', `
      process.argv = [process.execPath, 'dist/bin/indexes.js', '--firestore', 'Order'];
      const write = process.stdout.write.bind(process.stdout);
      let printed = '';
      process.stdout.write = (text) => { printed += text; return true; };
      require('./dist/bin/indexes.js');
      const files = Object.keys(require.cache);
      write(JSON.stringify({ loaded: files.some((f) => f.includes('@google-cloud/firestore')), indexes: JSON.parse(printed).indexes.length }));
    `]);
    assert.deepEqual(JSON.parse(out), { loaded: false, indexes: 4 });
  });

  it('declares the public types, resolved through the exports map', () => {
    const dir = mkdtempSync(join(root, 'test', '.package-'));
    try {
      const file = join(dir, 'consumer.ts');
      writeFileSync(file, [
        "import { Locker, MemoryStore, type LockerOptions, type TaskContext, type Store, type Queue, type AlertEvent } from 'datastore-locker';",
        "import { FirestoreStore, type FirestoreStoreOptions } from 'datastore-locker/firestore';",
        "export const firestoreOptions: FirestoreStoreOptions = { namespaces: [''] };",
        'export type Stores = [Store, FirestoreStore];',
        'const store: Store = new MemoryStore();',
        'const options: LockerOptions = { store, authenticate: false };',
        'export const locker: Locker = new Locker(options);',
        'export type Used = [TaskContext<{ n: number }>, Queue, AlertEvent];',
        '',
      ].join('\n'));
      const program = ts.createProgram([file], {
        module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16, strict: true, noEmit: true, skipLibCheck: true, types: ['node'],
      });
      const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      assert.deepEqual(problems, []);
      const resolved = program.getSourceFiles().map((f) => f.fileName).filter((f) => f.includes('/dist/'));
      assert.ok(resolved.some((f) => f.endsWith('dist/index.d.ts')), 'types come from dist/index.d.ts');
      assert.ok(resolved.some((f) => f.endsWith('dist/firestore.d.ts')), 'and the subpath\'s from dist/firestore.d.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The API reference (`npm run docs`, TypeDoc) builds from the doc comments with no warning at all:
// every export and every member of the public types has a doc comment, no type the API reaches is
// left unexported (an internal type leaking into the API), no {@link} is broken. typedoc.json
// turns each of those into an error; this test runs the same configuration, so an export added
// without a doc comment fails `npm test`, and checks that every runtime export is in the reference.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as library from '../../src/index';
import * as firestoreEntry from '../../src/firestore';

const root = join(__dirname, '..', '..');
const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
const installed = existsSync(typedoc);
// Outside CI a node_modules installed before TypeDoc was added may lack it; CI's `npm ci` has it.
const skip = !installed && !process.env.CI ? 'TypeDoc is not installed: run `npm install`' : false;

interface Reflection { name: string; children?: Reflection[] }

describe('the API reference (npm run docs)', { skip, timeout: 180_000 }, () => {
  let out: string;
  let result: { code: number; output: string };

  before(async () => {
    out = mkdtempSync(join(tmpdir(), 'datastore-locker-docs-'));
    result = await new Promise((resolve) => {
      execFile(process.execPath, [typedoc, '--out', join(out, 'html'), '--json', join(out, 'api.json')], { cwd: root, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}${stderr}` }));
    });
  });
  after(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('builds with no warning and no error', () => {
    const problems = result.output.replace(/\x1b\[[0-9;]*m/g, '').split('\n').filter((line) => /\[(warning|error)\]/.test(line));
    assert.deepEqual(problems, [], 'every export documented, no internal type leaking, no broken link');
    assert.equal(result.code, 0, result.output);
    assert.ok(existsSync(join(out, 'html', 'index.html')));
  });

  it('documents every runtime export of the package, each entry as a module of its own', () => {
    const api = JSON.parse(readFileSync(join(out, 'api.json'), 'utf8')) as Reflection;
    // Two entry points (typedoc.json): the reference has a module for each, named after its file.
    const modules = new Map((api.children ?? []).map((m) => [m.name, new Set((m.children ?? []).map((c) => c.name))]));
    assert.deepEqual([...modules.keys()].sort(), ['firestore', 'index']);
    const missing = (entry: string, exports: object): string[] => Object.keys(exports).filter((name) => !modules.get(entry)!.has(name));
    assert.deepEqual(missing('index', library), []);
    assert.deepEqual(missing('firestore', firestoreEntry), []);
    const main = modules.get('index')!;
    assert.ok(main.has('Locker') && main.has('LockerOptions') && main.has('TaskContext'));
    assert.ok(modules.get('firestore')!.has('FirestoreStoreOptions'));
  });
});

// The built declarations of the package (`npm test` builds dist/ first): no type of google-gax,
// which is not a dependency of this package (a consumer may not resolve it), and no member marked
// @internal (stripped by the build), in any .d.ts that ships.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const DIST = join(__dirname, '..', '..', 'dist');

/** Every .d.ts under `dir`. */
function declarations(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return declarations(path);
    return entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('the shipped declarations', () => {
  it('name no google-gax type and no @internal member', () => {
    assert.ok(existsSync(join(DIST, 'index.d.ts')), 'dist/index.d.ts exists (run `npm run build` first)');
    const files = declarations(DIST);
    assert.ok(files.some((file) => file.endsWith(join('store', 'datastore', 'store.d.ts'))), 'the Datastore store is declared');
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /google-gax/, `${file} names google-gax`);
      assert.doesNotMatch(text, /@internal/, `${file} ships an @internal member`);
    }
  });
});

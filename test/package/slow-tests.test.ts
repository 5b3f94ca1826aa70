// The list of slow test files that scripts/test.mjs starts first names only test
// files that exist, each once: an entry left behind by a rename would silently start nothing first.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

describe('scripts/slow-tests.mjs', () => {
  it('names existing test files, each once', async () => {
    const { SLOW_FIRST } = (await import(join(ROOT, 'scripts', 'slow-tests.mjs'))) as { SLOW_FIRST: string[] };
    assert.ok(SLOW_FIRST.length > 0);
    assert.equal(new Set(SLOW_FIRST).size, SLOW_FIRST.length, 'no file twice');
    for (const file of SLOW_FIRST) {
      assert.match(file, /^test\/.+\.test\.ts$/, `${file} is a test file's path from the repository's root`);
      assert.ok(existsSync(join(ROOT, file)), `${file} exists`);
    }
  });
});

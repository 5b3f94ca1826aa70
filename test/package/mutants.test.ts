/**
 * The model's mutants (model/mutants/*.patch, `npm run model:mutants`) still apply to the code as
 * it is: a fix that moved leaves its patch stale, and the mutation check would stop at it. Each
 * patch is checked with `git apply --check` (nothing is written); what a patch brings back is
 * `npm run model:mutants -- --verify`'s to show.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '..', '..');
const dir = join(root, 'model', 'mutants');

describe('the model\'s mutants', () => {
  const patches = readdirSync(dir).filter((f) => f.endsWith('.patch')).sort();

  it('are there', () => {
    assert.ok(patches.length >= 20, `${patches.length} patches in model/mutants`);
  });

  for (const patch of patches) {
    it(`${patch} applies to the code as it is`, () => {
      const r = spawnSync('git', ['apply', '--check', join(dir, patch)], { cwd: root, encoding: 'utf8' });
      assert.equal(r.status, 0, `${patch} no longer applies (write it again against the fix as it is now): ${r.stderr}`);
    });
  }
});

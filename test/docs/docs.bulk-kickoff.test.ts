// docs/guides/bulk-kickoff.md: every TypeScript block type-checks against the library, and the
// guide names the scripts that measure what it quotes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { docBlockProblems, typeCheckedBlocks } from '../support/doc-typecheck';

const root = join(__dirname, '..', '..');
const guide = readFileSync(join(root, 'docs', 'guides', 'bulk-kickoff.md'), 'utf8');

describe('docs/guides/bulk-kickoff.md', () => {
  const code = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  it('has a script that starts 10,000 chains with a progress line', () => {
    assert.ok(code.length >= 1);
    assert.match(code[0]!, /length: 10_000/);
    assert.match(code[0]!, /scheduleMany\(items, \{/);
    assert.match(code[0]!, /onProgress/);
    assert.match(code[0]!, /kickoffId/);
  });

  it('type-checks every TypeScript block against the library', async () => {
    // One program over every block of the documentation, built once per `npm test` (support/doc-typecheck.ts).
    const page = 'docs/guides/bulk-kickoff.md';
    assert.deepEqual(typeCheckedBlocks().filter((b) => b.page === page).map((b) => b.code), code, 'every block of the guide is type-checked');
    const problems = (await docBlockProblems()).filter((p) => p.page === page).map((p) => `block-${p.index}.ts: ${p.message}`);
    assert.deepEqual(problems, []);
  });

  it('names the package scripts that measure its figures', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const name of ['bench', 'bench:kickoff']) {
      assert.ok(guide.includes(`npm run ${name}`), `the guide names npm run ${name}`);
      assert.ok(scripts[name], `package.json has ${name}`);
    }
  });
});

// docs/guides/bulk-kickoff.md: every TypeScript block type-checks against the library, and the
// guide names the scripts that measure what it quotes.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = join(__dirname, '..');
const guide = readFileSync(join(root, 'docs', 'guides', 'bulk-kickoff.md'), 'utf8');
const dir = join(root, 'test', '.bulk-kickoff-blocks');

describe('docs/guides/bulk-kickoff.md', () => {
  const code = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const files: string[] = [];
  before(() => {
    mkdirSync(dir, { recursive: true });
    code.forEach((block, i) => {
      const file = join(dir, `block-${i}.ts`);
      writeFileSync(file, `${block.replace(/from 'datastore-locker'/g, "from '../../src/index'")}\nexport {};\n`);
      files.push(file);
    });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('has a script that starts 10,000 chains with a progress line', () => {
    assert.ok(code.length >= 1);
    assert.match(code[0]!, /length: 10_000/);
    assert.match(code[0]!, /scheduleMany\(items, \{/);
    assert.match(code[0]!, /onProgress/);
    assert.match(code[0]!, /kickoffId/);
  });

  it('type-checks every TypeScript block against the library', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    assert.ok(config);
    const program = ts.createProgram(files, { ...config.options, noEmit: true, noUnusedLocals: false });
    const problems = files.flatMap((f) => ts.getPreEmitDiagnostics(program, program.getSourceFile(f)))
      .map((d) => `${d.file ? d.file.fileName.split('/').pop() : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
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

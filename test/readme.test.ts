// The README's code blocks are part of the documentation's contract: every TypeScript block is
// type-checked against the library, the first one (the usage example) is run, and the set-up
// commands match package.json's scripts.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = join(__dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const dir = join(root, 'test', '.readme-blocks');

function blocks(lang: string): string[] {
  const fence = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
  return [...readme.matchAll(fence)].map((m) => m[1]!);
}

describe('README', () => {
  const code = blocks('ts');
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

  it('has TypeScript examples', () => {
    assert.ok(code.length >= 2, 'a usage example and a production set-up');
  });

  it('type-checks every TypeScript block against the library', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    assert.ok(config);
    const program = ts.createProgram(files, { ...config.options, noEmit: true, noUnusedLocals: false });
    const problems = files.flatMap((f) => ts.getPreEmitDiagnostics(program, program.getSourceFile(f)))
      .map((d) => `${d.file ? d.file.fileName.split('/').pop() : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    assert.deepEqual(problems, []);
  });

  it('runs the usage example: a three-step chain on the embedded defaults', async () => {
    const output = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', files[0]!], { cwd: root, timeout: 30_000, env: { ...process.env, METADATA_SERVER_DETECTION: 'none' } },
        (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)));
    });
    assert.deepEqual(output.trim().split('\n'), ['step 1: count is 1', 'step 2: count is 2', 'step 3: count is 3', 'chain complete']);
  });

  it('gives the two set-up commands, and they are package.json scripts', () => {
    const sh = blocks('sh').join('\n');
    assert.match(sh, /npm install && npm start/);
    assert.match(sh, /^npm test/m);
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.ok(scripts.start && scripts.test);
  });
});

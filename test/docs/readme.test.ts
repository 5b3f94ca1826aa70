// The README and every page under docs/ are part of the documentation's contract: every
// TypeScript block is type-checked against the library, the README's first one (the usage
// example) is run, the README's set-up commands match package.json's scripts, every page under
// docs/ is linked from the README, and every link between them resolves: a relative link to a file
// that exists (and a heading it names), an absolute link into the repository to a file the
// repository has. The README's links are absolute (it is also the registry's page, where the
// repository's files are not).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { docBlockProblems, typeCheckedBlocks } from '../support/doc-typecheck';

const root = join(__dirname, '..', '..');
const dir = join(root, 'test', '.readme-blocks');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; repository: { url: string } };
const REPOSITORY = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
const BLOB = `${REPOSITORY}/blob/main/`;
const TREE = `${REPOSITORY}/tree/main/`;

/** README.md and every Markdown page under docs/ (the generated docs/api aside), as repository paths. */
function pages(): string[] {
  const under = (folder: string): string[] => readdirSync(join(root, folder), { withFileTypes: true }).flatMap((e) => {
    const path = `${folder}/${e.name}`;
    if (e.isDirectory()) return path === 'docs/api' ? [] : under(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
  return ['README.md', ...under('docs')];
}

const text = (page: string): string => readFileSync(join(root, page), 'utf8');

function blocks(page: string, lang: string): string[] {
  const fence = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
  return [...text(page).matchAll(fence)].map((m) => m[1]!);
}

/** The anchors GitHub gives a page's headings. */
function anchors(page: string): Set<string> {
  const body = text(page).replace(/```[\s\S]*?```/g, '');
  return new Set([...body.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-')));
}

/** Every link of a page: [text](target), outside code blocks. */
function links(page: string): string[] {
  const body = text(page).replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...body.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('README and docs/', () => {
  const files: Array<{ page: string; file: string }> = [];

  before(() => {
    mkdirSync(dir, { recursive: true });
    for (const page of pages()) {
      blocks(page, 'ts').forEach((block, i) => {
        const file = join(dir, `${page.replace(/[/.]/g, '_')}-${i}.ts`);
        const index = relative(dir, join(root, 'src', 'index')).replace(/\\/g, '/');
        writeFileSync(file, `${block.replace(/from 'datastore-locker'/g, `from '${index}'`)}\nexport {};\n`);
        files.push({ page, file });
      });
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('has TypeScript examples in the README and in the guides', () => {
    assert.ok(blocks('README.md', 'ts').length >= 2, 'a usage example and a production set-up');
    assert.ok(files.filter((f) => f.page.startsWith('docs/guides/')).length >= 5, 'the guides show code');
  });

  it('type-checks every TypeScript block of every page against the library', async () => {
    // One program over every block, built once per `npm test` for the tests that ask for it.
    assert.deepEqual(typeCheckedBlocks().map((b) => `${b.page}#${b.index}`), files.map((f) => `${f.page}#${f.file.split('-').pop()!.replace('.ts', '')}`), 'the type-check covers every block of every page');
    const problems = (await docBlockProblems()).map((p) => `${p.page} (${p.index}.ts): ${p.message}`);
    assert.deepEqual(problems, []);
  });

  it('runs the usage example: a three-step chain on the embedded defaults', async () => {
    const output = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', files[0]!.file], { cwd: root, timeout: 30_000, env: { ...process.env, METADATA_SERVER_DETECTION: 'none' } },
        (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)));
    });
    assert.equal(files[0]!.page, 'README.md');
    assert.deepEqual(output.trim().split('\n'), ['step 1: count is 1', 'step 2: count is 2', 'step 3: count is 3', 'chain complete']);
  });

  it('gives the two set-up commands, and they are package.json scripts', () => {
    const sh = blocks('README.md', 'sh').join('\n');
    assert.match(sh, /npm install && npm start/);
    assert.match(sh, /^npm test/m);
    assert.ok(pkg.scripts.start && pkg.scripts.test);
  });

  it('keeps the README short', () => {
    const lines = text('README.md').split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines`);
  });

  it('links every page under docs/ from the README', () => {
    const linked = new Set(links('README.md').filter((l) => l.startsWith(BLOB)).map((l) => l.slice(BLOB.length).replace(/#.*$/, '')));
    assert.deepEqual(pages().filter((p) => p !== 'README.md' && !linked.has(p)), []);
  });

  it('links the README to the repository with absolute links only (it is also the registry\'s page)', () => {
    const relativeLinks = links('README.md').filter((l) => !/^(https?:|mailto:|#)/.test(l));
    assert.deepEqual(relativeLinks, []);
  });

  it('resolves every link between the pages and into the repository, headings included', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const link of links(page)) {
        let target: string;
        if (link.startsWith(BLOB) || link.startsWith(TREE)) target = link.slice(BLOB.length);
        else if (/^(https?:|mailto:)/.test(link)) continue;
        else if (link.startsWith('#')) target = `${page}${link}`;
        else target = relative(root, join(root, dirname(page), link)).replace(/\\/g, '/');
        const [path, anchor] = target.split('#') as [string, string | undefined];
        if (!existsSync(join(root, path))) broken.push(`${page}: ${link} (no file ${path})`);
        else if (anchor && path.endsWith('.md') && !anchors(path).has(anchor)) broken.push(`${page}: ${link} (no heading #${anchor} in ${path})`);
      }
    }
    assert.deepEqual(broken, []);
  });
});

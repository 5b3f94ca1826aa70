// The package as a user gets it: `npm pack` in a clean copy of the repository (its tracked and
// new files, no node_modules or dist: `prepack` has to build), the tarball installed with the
// peer and client packages into a fresh project under the system's temporary folder, then used
// from an ES module, from CommonJS and from a type-checked TypeScript file, as the README says.
//
// The install is offline from npm's cache (which `npm ci` fills with every tarball the lock file
// names), at the versions installed here; only when the cache lacks a package's metadata does npm
// go to the registry (--prefer-offline).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = join(__dirname, '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface Run { stdout: string; stderr: string }

/** Runs a command; rejects with its output when it exits non-zero. */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env: { ...process.env, METADATA_SERVER_DETECTION: 'none', ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 150_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve({ stdout, stderr })));
  });
}

/** The repository's tracked files and new ones git does not ignore: what a clean clone would hold. */
async function sourceFiles(): Promise<string[]> {
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root);
  return stdout.split('\0').filter((f) => f !== '' && existsSync(join(root, f)));
}

/** The version of a package installed in the repository, so the consumer gets the same one from the cache. */
function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/** A three-step chain through handle() on MemoryStore and LocalQueue, as the README's usage example runs it. */
function chainScript(imports: string): string {
  return `${imports}
const app = express();
const server = app.listen(0, '127.0.0.1');
const queue = new LocalQueue({ baseUrl: () => 'http://127.0.0.1:' + server.address().port });
const locker = new Locker({ store: new MemoryStore(), queue, logger: { info() {}, warn: console.error, error: console.error } });
app.post('/count', locker.handle(async (ctx) => {
  ctx.entity.count += 1;
  console.log('step ' + ctx.seq + ': count is ' + ctx.entity.count);
  if (ctx.seq < 3) await ctx.schedule('/count', { note: 'next' });
}, (props) => ({ count: typeof props.count === 'number' ? props.count : 0 })));
locker.on('completed', async (event) => {
  if (event.next !== undefined) return;
  console.log('chain complete, LeaseLostError is ' + typeof LeaseLostError);
  await queue.shutdown();
  server.close();
});
const key = new Datastore().key(['Counter', 'demo']);
server.on('listening', () => void locker.schedule(key, { count: 0 }, '/count'));
`;
}

const expectedChain = ['step 1: count is 1', 'step 2: count is 2', 'step 3: count is 3', 'chain complete, LeaseLostError is function'];

describe('the packed package, installed in a fresh project', { timeout: 240_000 }, () => {
  let work: string;
  let consumer: string;
  let packed: { filename: string; files: Array<{ path: string }>; entryCount: number; size: number };

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'datastore-locker-pack-'));
    const copy = join(work, 'repo');
    for (const file of await sourceFiles()) {
      mkdirSync(dirname(join(copy, file)), { recursive: true });
      cpSync(join(root, file), join(copy, file));
    }
    assert.ok(!existsSync(join(copy, 'dist')), 'the copy starts without dist/');
    // The devDependencies prepack builds with (TypeScript), without installing them again.
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
    consumer = join(work, 'consumer');
    mkdirSync(consumer);
    writeFileSync(join(consumer, 'package.json'), `${JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }, null, 2)}\n`);
    const install = (packages: string[]) => (mode: string): Promise<Run> =>
      run(npm, ['install', mode, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', ...packages], consumer);
    const offlineFirst = (packages: string[]): Promise<Run> => install(packages)('--offline').catch(() => install(packages)('--prefer-offline'));

    // The peers and client packages install while the package is packed (the build is the slow part).
    const peers = ['express', '@google-cloud/datastore', '@google-cloud/tasks', '@types/express', '@types/node'].map((name) => `${name}@${installedVersion(name)}`);
    const [{ stdout }] = await Promise.all([run(npm, ['pack', '--json', '--pack-destination', work], copy), offlineFirst(peers)]);
    [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [typeof packed];
    await offlineFirst([join(work, packed.filename), ...peers]);
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('packs dist with its type declarations, README.md, LICENSE and CHANGELOG.md, and nothing else', () => {
    const files = packed.files.map((f) => f.path);
    for (const file of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'dist/index.js', 'dist/index.mjs', 'dist/index.d.ts']) {
      assert.ok(files.includes(file), `${file} is packed`);
    }
    const outside = files.filter((f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'].includes(f));
    assert.deepEqual(outside, [], 'only dist/ and the four documents');
    assert.deepEqual(files.filter((f) => /^(test|bench|example-app|src|scripts)\//.test(f) || f.includes('tsbuildinfo')), []);
    const scripts = files.filter((f) => f.endsWith('.js'));
    assert.ok(scripts.length > 10, `dist holds the compiled modules (${scripts.length})`);
    assert.deepEqual(scripts.filter((f) => !files.includes(f.replace(/\.js$/, '.d.ts'))), [], 'every module has its declarations');
    assert.equal(readFileSync(join(consumer, 'node_modules', 'datastore-locker', 'LICENSE'), 'utf8'), readFileSync(join(root, 'LICENSE'), 'utf8'));
  });

  it('points the registry\'s page at the repository: package.json names it, and the README links into it with absolute links only', () => {
    const installed = join(consumer, 'node_modules', 'datastore-locker');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { repository: { url: string }; homepage: string; bugs: { url: string } };
    const repository = manifest.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    assert.match(repository, /^https:\/\/github\.com\/[\w-]+\/[\w-]+$/);
    assert.ok(manifest.homepage.startsWith(repository) && manifest.bugs.url.startsWith(repository));
    const links = [...readFileSync(join(installed, 'README.md'), 'utf8').replace(/```[\s\S]*?```/g, '').matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    assert.ok(links.length > 10, 'the README links to the documentation');
    assert.deepEqual(links.filter((l) => !l.startsWith(`${repository}/`)), [], 'every link goes to the repository');
  });

  it('is the tarball the README installs: the same file name, from `npm pack` in a clone', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const install = /\(cd datastore-locker && npm install && npm pack\)\nnpm install \.\/datastore-locker\/(\S+\.tgz) /.exec(readme);
    assert.ok(install, 'the README packs a clone and installs the tarball');
    assert.equal(install[1], packed.filename, 'the README names the tarball npm pack makes');
  });

  it('installs the datastore-locker-indexes command', async () => {
    const { stdout } = await run(join(consumer, 'node_modules', '.bin', 'datastore-locker-indexes'), ['Order'], consumer);
    assert.equal(stdout.match(/^- kind: "Order"$/gm)?.length, 4, stdout);
    assert.match(stdout, /^ {4}direction: desc$/m);
  });

  it('ships source maps that carry their sources (src/ is not packed, so a map naming it alone would point nowhere)', () => {
    const maps = packed.files.map((f) => f.path).filter((f) => f.endsWith('.js.map'));
    assert.ok(maps.length > 10, `dist holds the source maps (${maps.length})`);
    const installed = join(consumer, 'node_modules', 'datastore-locker');
    const empty = maps.filter((file) => {
      const map = JSON.parse(readFileSync(join(installed, file), 'utf8')) as { sources: string[]; sourcesContent?: Array<string | null> };
      return map.sources.length === 0 || map.sources.some((_, i) => typeof map.sourcesContent?.[i] !== 'string' || map.sourcesContent[i] === '');
    });
    assert.deepEqual(empty, [], 'every map holds the text of each source it names');
  });

  it('runs a chain through handle() from an ES module', async () => {
    assert.ok(!existsSync(join(consumer, 'node_modules', '@opentelemetry', 'api')), 'the optional peer @opentelemetry/api is not installed: the chains below run without it');
    writeFileSync(join(consumer, 'chain.mjs'), chainScript([
      "import express from 'express';",
      "import { Datastore } from '@google-cloud/datastore';",
      "import { Locker, LocalQueue, MemoryStore, LeaseLostError } from 'datastore-locker';",
    ].join('\n')));
    const { stdout } = await run(process.execPath, ['chain.mjs'], consumer);
    assert.deepEqual(stdout.trim().split('\n'), expectedChain);
  });

  it('runs a chain through handle() from CommonJS, with the same classes as import', async () => {
    writeFileSync(join(consumer, 'chain.cjs'), chainScript([
      "const express = require('express');",
      "const { Datastore } = require('@google-cloud/datastore');",
      "const { Locker, LocalQueue, MemoryStore, LeaseLostError } = require('datastore-locker');",
      "import('datastore-locker').then((esm) => { if (esm.Locker !== Locker) throw new Error('import and require load two copies'); });",
    ].join('\n')));
    const { stdout } = await run(process.execPath, ['chain.cjs'], consumer);
    assert.deepEqual(stdout.trim().split('\n'), expectedChain);
  });

  it('type-checks consumer files against the installed declarations, as an ES module and as CommonJS', async () => {
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'node16', moduleResolution: 'node16', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
      files: ['consumer.mts', 'consumer.cts'],
    }));
    const body = [
      'class Counter { count: number; constructor(props: Properties) { this.count = typeof props.count === \'number\' ? props.count : 0; } }',
      'const options: LockerOptions = { store: new MemoryStore(), authenticate: false, maxRetries: 5 };',
      'const locker = new Locker(options);',
      'const app = express();',
      "app.post('/count', locker.handle<Counter>(async (ctx: TaskContext<Counter>) => { ctx.entity.count += 1; const seq: number = ctx.seq; void seq; }, (props) => new Counter(props)));",
      "export const datastore = new Locker({ store: new DatastoreStore(new Datastore()), authenticate: oidcAuthenticator({ audience: 'https://a.example', serviceAccountEmail: 't@p.iam.gserviceaccount.com' }) });",
      "export const status: number = new StoreUnavailableError('down').status;",
      '// @ts-expect-error: a handler that is not a function is refused by the declarations',
      "app.post('/bad', locker.handle(42, (props) => new Counter(props)));",
    ];
    const names = "DatastoreStore, Locker, MemoryStore, StoreUnavailableError, oidcAuthenticator, type LockerOptions, type Properties, type TaskContext";
    writeFileSync(join(consumer, 'consumer.mts'), [
      "import express from 'express';",
      "import { Datastore } from '@google-cloud/datastore';",
      "import { CloudTasksClient } from '@google-cloud/tasks';",
      `import { CloudTasksQueue, ${names} } from 'datastore-locker';`,
      ...body,
      "export const tasks = new Locker({ store: new MemoryStore(), queue: new CloudTasksQueue({ client: new CloudTasksClient(), project: 'p', location: 'l', queue: 'q', target: { type: 'appengine' } }) });",
      '',
    ].join('\n'));
    // @google-cloud/tasks 6 declares its CommonJS entry as an ES module, so TypeScript refuses to
    // import it from CommonJS: the CommonJS consumer leaves CloudTasksClient out.
    writeFileSync(join(consumer, 'consumer.cts'), [
      "import express = require('express');",
      "import { Datastore } from '@google-cloud/datastore';",
      `import { ${names} } from 'datastore-locker';`,
      ...body,
      '',
    ].join('\n'));
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], consumer);
    assert.ok(existsSync(join(consumer, 'node_modules', 'datastore-locker', 'dist', 'index.d.ts')));
  });
});

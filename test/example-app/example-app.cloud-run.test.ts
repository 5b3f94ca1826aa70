/**
 * The example app as `gcloud run deploy --source .` builds it with Google Cloud's Node.js buildpack:
 * `npm ci` with the devDependencies (a `gcp-build` script is present), `npm run gcp-build` (the
 * esbuild bundle, example-app/build.mjs), `npm prune --production`, then the Procfile's `web`
 * command as the container's entrypoint (without a Procfile it would be `npm start`, whose tsx
 * the prune removed). Modelled here: the bundle built into a directory outside the repository,
 * next to a node_modules that holds only what the prune keeps (every package-lock entry not
 * marked `dev`), started with the Procfile's command on the PORT Cloud Run would set, stopped
 * with SIGTERM as Cloud Run stops an instance.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { exampleEnv, fetchStatus, ROOT, startExample, waitFor, type ExampleProcess } from '../support/example-process';
import { freePort } from '../support/free-port';

interface LockEntry { dev?: boolean }

/** The Procfile's `web` command, split into the program and its arguments. */
function procfileWeb(): string[] {
  const procfile = readFileSync(path.join(ROOT, 'Procfile'), 'utf8');
  const web = /^web:\s*(.+)$/m.exec(procfile)?.[1];
  assert.ok(web, 'the Procfile has a web process');
  return web.trim().split(/\s+/);
}

/** Copies the top-level packages `npm prune --production` keeps into `dir/node_modules` (hard links where the file system allows). */
function productionModules(dir: string): string[] {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const kept = Object.entries(lock.packages)
    .filter(([where, entry]) => where.startsWith('node_modules/') && where.split('node_modules/').length === 2 && entry.dev !== true)
    .map(([where]) => where);
  for (const where of kept) {
    const from = path.join(ROOT, where);
    if (!existsSync(from)) continue; // an optional package for another platform
    const to = path.join(dir, where);
    mkdirSync(path.dirname(to), { recursive: true });
    try {
      execFileSync('cp', ['-al', from, to], { stdio: 'pipe' });
    } catch {
      execFileSync('cp', ['-R', from, to], { stdio: 'pipe' });
    }
  }
  return kept;
}

describe('example app, built as Cloud Run’s Node.js buildpack builds it (gcloud run deploy --source .)', () => {
  let dir: string;
  let app: ExampleProcess | undefined;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'example-cloud-run-'));
  });
  after(async () => {
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts from the Procfile, not `npm start`, with the same command App Engine runs', () => {
    const yaml = readFileSync(path.join(ROOT, 'app.yaml'), 'utf8');
    const entrypoint = /^entrypoint: (.+)$/m.exec(yaml)?.[1];
    assert.equal(procfileWeb().join(' '), entrypoint);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };
    assert.match(pkg.scripts.start!, /^tsx /, 'npm start runs tsx, which is why the Procfile is needed');
    assert.ok('tsx' in pkg.devDependencies, 'tsx is a devDependency: the prune removes it');
    assert.equal(pkg.scripts['gcp-build'], 'node example-app/build.mjs', 'the buildpack runs gcp-build before the prune');
  });

  it('runs the bundle with only the production packages, on PORT, and exits 0 on SIGTERM after shutting down', async () => {
    execFileSync(process.execPath, [path.join(ROOT, 'example-app', 'build.mjs'), path.join(dir, 'example-app', 'dist', 'main.js')], { cwd: ROOT, stdio: 'pipe' });
    copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
    const kept = productionModules(dir);
    assert.ok(!kept.includes('node_modules/tsx') && !kept.includes('node_modules/express'), 'tsx and Express (a devDependency here) are pruned');
    assert.ok(kept.includes('node_modules/@google-cloud/datastore'), 'the peer dependencies stay');

    const port = await freePort();
    const [program, ...args] = procfileWeb();
    assert.equal(program, 'node');
    const env = exampleEnv({ PORT: String(port), HOST: '127.0.0.1', K_SERVICE: 'example', EXAMPLE_AUTOSTART: '1' });
    delete env.NODE_PATH;
    app = await startExample({}, args, env, dir);
    assert.equal(app.url, `http://127.0.0.1:${port}`, 'it listens on PORT');
    await waitFor('the order chain to finish', async () => (/^order .* step 3 ran: archived$/m.test(app!.stdout()) ? true : undefined));
    await assert.rejects(fetchStatus(app.url), /403/, 'deployed without IAP, the status is closed');
    const code = await app.stop();
    assert.equal(code, 0);
    const out = app.stdout();
    assert.ok(out.indexOf('SIGTERM received: shutting down') < out.indexOf('datastore-locker example stopped'), out);
  });
});

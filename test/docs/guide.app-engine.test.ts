/**
 * The App Engine guide's app (docs/guides/app-engine/: main.ts, app.yaml, cron.yaml, package.json,
 * tsconfig.json) is what the guide shows, verbatim; main.ts type-checks against the library; and it
 * runs as deployed: a child process started from the file with the environment app.yaml and App
 * Engine give it, behind the modelled App Engine front (test/support/app-engine-front.ts), its
 * tasks created through the real CloudTasksClient on the loopback Cloud Tasks server and delivered
 * by the modelled dispatcher through the front (which sets X-AppEngine-QueueName), its sweep called
 * by the modelled cron at cron.yaml's URL. A chain started as the guide's kickoff script starts one
 * completes; the sweep runs; a task of another queue (which the front lets in) is refused; forged
 * X-AppEngine-* headers from outside are stripped by the front and the request refused; off App
 * Engine the app does not start.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksQueue, DatastoreStore, Locker } from '../../src/index';
import { connectClient, startCloudTasksServer, type CloudTasksServer } from '../support/cloud-tasks-server';
import { waitFor } from '../support/example-process';
import { freePort } from '../support/free-port';
import { startAppEngineFront, type AppEngineFront } from '../support/app-engine-front';
import { startDispatcher, type CloudTasksDispatcher } from '../support/cloud-tasks-dispatcher';

const ROOT = path.resolve(__dirname, '..', '..');
const APP = path.join(ROOT, 'docs', 'guides', 'app-engine');
const GUIDE = path.join(ROOT, 'docs', 'guides', 'deploy-app-engine.md');
const DIR = path.join(ROOT, 'test', '.guide-app-engine');
const COPY = path.join(DIR, 'main.ts');
const FILES: Array<[string, string]> = [['main.ts', 'ts'], ['app.yaml', 'yaml'], ['cron.yaml', 'yaml'], ['package.json', 'json'], ['tsconfig.json', 'json']];
const PROJECT = process.env.DATASTORE_PROJECT_ID ?? 'locker-test';

const read = (file: string) => readFileSync(path.join(APP, file), 'utf8');

/** app.yaml's env_variables. */
function appYamlEnv(): Record<string, string> {
  return Object.fromEntries([...read('app.yaml').matchAll(/^ {2}([A-Z][A-Z0-9_]*): "([^"]*)"$/gm)].map((m) => [m[1]!, m[2]!]));
}

interface Service { child: ChildProcess; exited: Promise<number | null>; stdout(): string; stderr(): string }

function run(env: Record<string, string>): Service {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PORT|GOOGLE_CLOUD_PROJECT|TASKS_.*|K_SERVICE|GAE_.*|CLOUD_TASKS_.*)$/.test(name)));
  const child = spawn(process.execPath, ['--import', 'tsx', COPY], { cwd: ROOT, env: { ...clean, METADATA_SERVER_DETECTION: 'none', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: string[] = [];
  const err: string[] = [];
  child.stdout?.setEncoding('utf8').on('data', (c: string) => out.push(c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => err.push(c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stdout: () => out.join(''), stderr: () => err.join('') };
}

describe('the App Engine guide’s app', () => {
  before(() => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(COPY, read('main.ts').replace(/from 'datastore-locker'/g, "from '../../src/index'"));
  });
  after(() => rmSync(DIR, { recursive: true, force: true }));

  it('is shown in the guide file by file, verbatim', () => {
    const guide = readFileSync(GUIDE, 'utf8');
    for (const [file, lang] of FILES) assert.ok(guide.includes('```' + lang + '\n' + read(file) + '```\n'), `the guide shows ${file} as it is`);
    const cron = /url: (\S+)/.exec(read('cron.yaml'))?.[1];
    assert.equal(cron, '/sweep');
    assert.match(read('main.ts'), /app\.get\('\/sweep', locker\.sweepHandler\(\{ authenticate: appEngineCronAuthenticator\(\) \}\)\)/);
    const pkg = JSON.parse(read('package.json')) as { main: string; scripts: Record<string, string> };
    assert.match(read('app.yaml'), new RegExp(`^entrypoint: node ${pkg.main}$`, 'm'));
    assert.equal(pkg.scripts.start, `node ${pkg.main}`);
  });

  it('type-checks against the library', () => {
    const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    assert.ok(config);
    const program = ts.createProgram([COPY], { ...config.options, noEmit: true });
    assert.deepEqual(ts.getPreEmitDiagnostics(program, program.getSourceFile(COPY)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')), []);
  });

  it('does not start off App Engine: its authenticators trust a front that is not there', async () => {
    const service = run({ ...appYamlEnv(), PORT: '0', GOOGLE_CLOUD_PROJECT: 'demo', K_SERVICE: 'orders', CLOUD_TASKS_EMULATOR_HOST: '127.0.0.1:9' });
    assert.notEqual(await service.exited, 0);
    assert.match(service.stderr(), /ConfigError: appEngineAuthenticator trusts App Engine's front/);
  });

  describe('deployed, behind the modelled App Engine front', { skip: process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)' }, () => {
    let tasks: CloudTasksServer;
    let front: AppEngineFront;
    let dispatcher: CloudTasksDispatcher;
    let service: Service;
    let kickoff: Locker;
    const datastore = new Datastore({ projectId: PROJECT });
    const order = datastore.key(['Order', `ae-${process.pid}-${Date.now()}`]);

    before(async () => {
      tasks = await startCloudTasksServer();
      const port = await freePort();
      front = await startAppEngineFront(`http://127.0.0.1:${port}`);
      service = run({
        ...appYamlEnv(), PORT: String(port), GAE_APPLICATION: `e~${PROJECT}`, GAE_SERVICE: 'default', GAE_VERSION: 'v1', GOOGLE_CLOUD_PROJECT: PROJECT,
        CLOUD_TASKS_EMULATOR_HOST: `127.0.0.1:${tasks.port}`,
      });
      await waitFor('the app to listen', async () => {
        if (service.child.exitCode !== null) throw new Error(`exited ${service.child.exitCode}: ${service.stderr()}`);
        return /listening on/.test(service.stdout()) ? true : undefined;
      }, 30_000);
      dispatcher = startDispatcher({ server: tasks, queue: appYamlEnv().TASKS_QUEUE!, appEngine: front, retry: { minBackoffMs: 100, maxBackoffMs: 1000, maxDoublings: 5, maxAttempts: -1 } });
      // The guide's kickoff script: a Locker of its own, creating the first task in the app's queue.
      kickoff = new Locker({
        store: new DatastoreStore(datastore),
        queue: new CloudTasksQueue({ client: connectClient(tasks.port), project: PROJECT, location: appYamlEnv().TASKS_LOCATION!, queue: appYamlEnv().TASKS_QUEUE!, target: { type: 'appengine' } }),
        authenticate: false,
      });
    });
    after(async () => {
      await dispatcher?.stop();
      await kickoff?.shutdown();
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await Promise.all([tasks.close(), front.close()]);
    });

    it('runs a chain started by the kickoff script to the end, its tasks delivered through the front', async () => {
      await kickoff.schedule(order, { amountCents: 1200 }, '/tasks/order/charge');
      const step = await waitFor('the order to complete', async () => {
        const s = await kickoff.inspect().step(order);
        return s?.state === 'complete' ? s : undefined;
      });
      assert.equal(step.properties.charged, true);
      assert.equal(step.properties.receiptSent, true);
      assert.deepEqual(dispatcher.attempts.map((a) => [a.path, a.status]), [['/tasks/order/charge', 200], ['/tasks/order/receipt', 200]]);
      assert.deepEqual(tasks.calls.map((c) => c.task?.appEngineHttpRequest?.relativeUri), ['/tasks/order/charge', '/tasks/order/receipt']);
    });

    it('sweeps when cron calls cron.yaml’s URL', async () => {
      const res = await front.fromCron(/url: (\S+)/.exec(read('cron.yaml'))![1]!);
      assert.equal(res.status, 200);
      assert.ok('resent' in ((await res.json()) as object));
    });

    it('refuses a task of another queue, which the front lets in', async () => {
      const res = await front.fromCloudTasks('/tasks/order/charge', { queue: 'other', taskName: 't-other', retryCount: 0, headers: { 'x-lock-key': 'x', 'x-lock-seq': '1' }, body: Buffer.from('{}') });
      assert.equal(res.status, 403);
    });

    it('strips forged X-AppEngine-* headers from outside requests, and the app refuses them', async () => {
      const cron = await fetch(`${front.url}/sweep`, { headers: { 'X-Appengine-Cron': 'true' } });
      assert.equal(cron.status, 401);
      const task = await fetch(`${front.url}/tasks/order/charge`, { method: 'POST', headers: { 'X-AppEngine-QueueName': 'steps', 'X-AppEngine-TaskName': 'forged', 'x-lock-key': 'x', 'x-lock-seq': '1' }, body: '{}' });
      assert.equal(task.status, 401);
      assert.deepEqual(front.log.filter((e) => e.from === 'outside').map((e) => e.stripped.sort()), [['x-appengine-cron'], ['x-appengine-queuename', 'x-appengine-taskname']]);
    });

    it('stops on SIGTERM with exit code 0', async () => {
      await dispatcher.stop();
      process.kill(service.child.pid!, 'SIGTERM');
      assert.equal(await service.exited, 0);
      assert.match(service.stdout(), /"stopped"/);
    });
  });
});

/**
 * The Cloud Run guide's main.ts (docs/guides/cloud-run/main.ts) is what the guide shows, verbatim;
 * it type-checks against the library; and it runs as deployed: a child process started from the
 * file (importing the library's source) with nothing but its environment, behind the modelled
 * Cloud Run front (test/support/cloud-run-front.ts) configured as the guide configures the real
 * one (--no-allow-unauthenticated, the invokers it grants, --timeout=600), on the Datastore
 * emulator, its tasks created through the real CloudTasksClient on the loopback Cloud Tasks server
 * (CLOUD_TASKS_EMULATOR_HOST) and delivered by the modelled dispatcher with OIDC tokens signed by
 * the loopback issuer, the sweep called by the modelled Cloud Scheduler job, alerts mailed to a
 * loopback SMTP server. A chain runs end to end, a step failed for good is mailed, the sweep runs,
 * invokers the front admits but the routes must not (the caller, the other account) are refused,
 * a forged stripped token is refused by the same file deployed public, a missing variable is one
 * clear line and exit code 2, and SIGTERM stops it with exit code 0.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { startCloudTasksServer, type CloudTasksServer } from '../support/cloud-tasks-server';
import { encode, idTokenClaims, startOidcIssuer, type OidcIssuer } from '../support/oidc-issuer';
import { TestSmtpServer } from '../support/smtp';
import { uniqueNamespace } from '../support/emulator';
import { waitFor } from '../support/example-process';
import { freePort } from '../support/free-port';
import { startCloudRunFront, STRIPPED, type CloudRunFront } from '../support/cloud-run-front';
import { startDispatcher, type CloudTasksDispatcher } from '../support/cloud-tasks-dispatcher';
import { runSchedulerJob } from '../support/cloud-scheduler';

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCE = path.join(ROOT, 'docs', 'guides', 'cloud-run', 'main.ts');
const GUIDE = path.join(ROOT, 'docs', 'guides', 'deploy-cloud-run.md');
const DIR = path.join(ROOT, 'test', '.guide-main');
const COPY = path.join(DIR, 'main.ts');
const ACCOUNT = 'tasks@demo-project.iam.gserviceaccount.com';
const SCHEDULER = 'scheduler@demo-project.iam.gserviceaccount.com';
const YOU = 'you@example.com';
const TIMEOUT_SECONDS = 600;

const source = readFileSync(SOURCE, 'utf8');

/** The guide's service as a child process, its output captured. */
interface Service {
  child: ChildProcess;
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
}

/** Starts main.ts as `node main.js` would run it: the file itself, configured by its environment only. */
function run(env: Record<string, string>): Service {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PORT|GOOGLE_CLOUD_PROJECT|TASKS_.*|SCHEDULER_.*|SERVICE_URL|SMTP_URL|ALERT_.*|REQUEST_TIMEOUT_SECONDS|DATASTORE_NAMESPACE|K_SERVICE|GAE_.*|CLOUD_RUN_AUTH|CLOUD_TASKS_.*)$/.test(name)));
  const child = spawn(process.execPath, ['--import', 'tsx', COPY], {
    cwd: ROOT, env: { ...clean, METADATA_SERVER_DETECTION: 'none', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  const err: string[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => out.push(chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => err.push(chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stdout: () => out.join(''), stderr: () => err.join('') };
}

/** The JSON lines a run printed. */
function lines(text: string): Array<Record<string, unknown>> {
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The variables of the guide's deploy command, as in the guide, for a service at `url`. */
function deployEnv(url: string, more: Record<string, string> = {}): Record<string, string> {
  return {
    K_SERVICE: 'orders', GOOGLE_CLOUD_PROJECT: 'demo', TASKS_LOCATION: 'europe-west1', TASKS_QUEUE: 'steps', SERVICE_URL: url,
    CLOUD_RUN_AUTH: 'iam', TASKS_SERVICE_ACCOUNT: ACCOUNT, SCHEDULER_SERVICE_ACCOUNT: SCHEDULER,
    SMTP_URL: 'smtp://127.0.0.1:9', ALERT_TO: 'ops@example.com', ALERT_FROM: 'locker@example.com',
    REQUEST_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS), CLOUD_TASKS_EMULATOR_HOST: '127.0.0.1:9', ...more,
  };
}

async function listening(service: Service): Promise<void> {
  await waitFor('the service to listen', async () => {
    if (service.child.exitCode !== null) throw new Error(`exited ${service.child.exitCode}: ${service.stderr()}`);
    return lines(service.stdout()).some((l) => l.message === 'listening') ? true : undefined;
  }, 30_000);
}

describe('the Cloud Run guide’s main.ts', () => {
  before(() => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(COPY, source.replace(/from 'datastore-locker'/g, "from '../../src/index'"));
  });
  after(() => rmSync(DIR, { recursive: true, force: true }));

  it('is shown in the guide verbatim, as a ts block', () => {
    const guide = readFileSync(GUIDE, 'utf8');
    assert.ok(guide.includes('```ts\n' + source + '```\n'), 'docs/guides/deploy-cloud-run.md holds main.ts as it is');
  });

  it('type-checks against the library', () => {
    const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    assert.ok(config);
    const program = ts.createProgram([COPY], { ...config.options, noEmit: true });
    const problems = ts.getPreEmitDiagnostics(program, program.getSourceFile(COPY)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(problems, []);
  });

  it('stops with one line naming a missing variable of its own, exit code 2, not as the library\'s ConfigError', async () => {
    for (const name of ['SMTP_URL', 'CLOUD_RUN_AUTH', 'SCHEDULER_SERVICE_ACCOUNT']) {
      const env = deployEnv('https://orders.example.com', { PORT: '0' });
      delete env[name];
      const service = run(env);
      assert.equal(await service.exited, 2, service.stderr());
      const errors = lines(service.stderr());
      assert.equal(errors.length, 1, service.stderr());
      assert.equal(errors[0]!.severity, 'ERROR');
      assert.match(String(errors[0]!.message), new RegExp(`^configuration error: ${name} is not set: set it to `));
      assert.doesNotMatch(service.stderr(), /\n\s+at |ConfigError/, 'no stack trace, and not named as the library\'s error');
    }
  });

  it('refuses a request timeout too short for a lease, naming the variable', async () => {
    const service = run(deployEnv('https://orders.example.com', { PORT: '0', REQUEST_TIMEOUT_SECONDS: '60' }));
    assert.equal(await service.exited, 2);
    assert.match(String(lines(service.stderr())[0]?.message), /^configuration error: REQUEST_TIMEOUT_SECONDS must be the service's --timeout, 90 to 1800/);
  });

  it('will not start with CLOUD_RUN_AUTH=iam off Cloud Run: the library\'s ConfigError, reported as such, exit code 1', async () => {
    const env = deployEnv('https://orders.example.com', { PORT: '0' });
    delete env.K_SERVICE;
    const service = run(env);
    assert.equal(await service.exited, 1);
    assert.match(String(lines(service.stderr())[0]?.message), /^failed to start: ConfigError: cloudRunIamAuthenticator trusts Cloud Run's front/);
  });

  describe('deployed as the guide deploys it, behind the modelled Cloud Run front', { skip: process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)' }, () => {
    let tasks: CloudTasksServer;
    let issuer: OidcIssuer;
    let smtp: TestSmtpServer;
    let front: CloudRunFront;
    let dispatcher: CloudTasksDispatcher;
    let service: Service;
    let url: string;
    const you = () => ({ authorization: `Bearer ${issuer.sign(idTokenClaims({ aud: url, email: YOU }))}` });
    const startOrder = (id: string, amountCents: number) => fetch(`${url}/orders/${id}`, {
      method: 'POST', headers: { ...you(), 'content-type': 'application/json' }, body: JSON.stringify({ amountCents }),
    });
    const order = async (id: string) => (await (await fetch(`${url}/orders/${id}`, { headers: you() })).json()) as Record<string, unknown>;

    before(async () => {
      [tasks, issuer, smtp] = await Promise.all([startCloudTasksServer(), startOidcIssuer(), TestSmtpServer.start()]);
      const port = await freePort();
      // The invokers the guide grants roles/run.invoker: the tasks account, the scheduler's, and you.
      front = await startCloudRunFront({
        upstream: `http://127.0.0.1:${port}`, auth: 'iam', issuer, invokers: [ACCOUNT, SCHEDULER, YOU], timeoutMs: TIMEOUT_SECONDS * 1000,
      });
      url = front.url;
      service = run(deployEnv(url, {
        PORT: String(port), GOOGLE_CLOUD_PROJECT: process.env.DATASTORE_PROJECT_ID ?? 'locker-test', DATASTORE_NAMESPACE: uniqueNamespace('guide'),
        SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, CLOUD_TASKS_EMULATOR_HOST: `127.0.0.1:${tasks.port}`,
      }));
      await listening(service);
      // The queue as the guide creates it (min backoff shortened: the model's clock is the test's).
      dispatcher = startDispatcher({ server: tasks, queue: 'steps', issuer, retry: { minBackoffMs: 100, maxBackoffMs: 1000, maxDoublings: 5, maxAttempts: -1 } });
    });
    after(async () => {
      await dispatcher?.stop();
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
      await Promise.all([tasks.close(), issuer.close(), smtp.stop(), front.close()]);
    });

    it('says at start-up what it trusts, per route', () => {
      const trust = lines(service.stdout()).filter((l) => /trusting Cloud Run's IAM front/.test(String(l.message)));
      assert.deepEqual(trust.map((l) => l.serviceAccounts), [[ACCOUNT], [SCHEDULER]]);
    });

    it('runs a first chain end to end, every task through the front', async () => {
      assert.equal((await fetch(`${url}/orders/o-1`, { method: 'POST', body: '{}' })).status, 401, 'the front refuses a caller without a token');
      const started = await startOrder('o-1', 1200);
      assert.equal(started.status, 202);
      const done = await waitFor('order o-1 to complete', async () => {
        const body = await order('o-1');
        return body.state === 'complete' ? body : undefined;
      });
      assert.equal(done.charged, true);
      assert.equal(done.receiptSent, true);
      const created = tasks.calls.map((c) => c.task?.httpRequest);
      assert.deepEqual(created.map((h) => new URL(h!.url!).pathname), ['/tasks/order/charge', '/tasks/order/receipt']);
      for (const h of created) assert.deepEqual(h!.oidcToken, { serviceAccountEmail: ACCOUNT, audience: url });
      assert.deepEqual(tasks.calls.map((c) => c.task?.dispatchDeadline?.seconds), [TIMEOUT_SECONDS, TIMEOUT_SECONDS], 'the dispatch deadline is the service’s timeout');
      assert.deepEqual(dispatcher.attempts.map((a) => a.status), [200, 200], 'each task was answered once, 200');
      const taskEntries = front.log.filter((e) => e.path.startsWith('/tasks/'));
      assert.deepEqual(taskEntries.map((e) => [e.status, e.by]), [[200, 'app'], [200, 'app']], 'the app, not the front, answered the tasks');
    });

    it('mails the alert of a step failed for good', async () => {
      assert.equal((await startOrder('o-2', 5_000_000)).status, 202);
      const mail = await waitFor('the failure alert', async () => smtp.messages.find((m) => m.text.includes('o-2')));
      assert.deepEqual(mail.envelope.to, ['ops@example.com']);
      assert.match(mail.text, /the provider refuses 5000000 cents/);
      assert.equal((await order('o-2')).state, 'failed');
    });

    it('sweeps when the modelled Cloud Scheduler job runs, with the scheduler’s account only', async () => {
      const job = { uri: `${url}/sweep`, serviceAccountEmail: SCHEDULER, audience: url, attemptDeadlineMs: 180_000 };
      const swept = await runSchedulerJob(job, issuer);
      assert.equal(swept.status, 200, swept.body);
      assert.deepEqual(Object.keys(JSON.parse(swept.body) as object).sort(), ['alerted', 'cleared', 'failed', 'malformed', 'resent', 'waiting']);
      const asTasks = await runSchedulerJob({ ...job, serviceAccountEmail: ACCOUNT }, issuer);
      assert.equal(asTasks.status, 403, 'the tasks account passes the front but may not sweep');
      assert.equal((await runSchedulerJob({ ...job, serviceAccountEmail: 'stranger@example.com' }, issuer)).status, 403, 'a non-invoker: the front says 403');
      assert.deepEqual(front.log.filter((e) => e.path === '/sweep').map((e) => [e.status, e.by]), [[200, 'app'], [403, 'app'], [403, 'front']]);
    });

    it('refuses another invoker on the task routes, and a forged token at the front', async () => {
      const step = { 'x-lock-key': 'x', 'x-lock-seq': '1' };
      const asYou = await fetch(`${url}/tasks/order/charge`, { method: 'POST', headers: { ...you(), ...step }, body: '{}' });
      assert.equal(asYou.status, 403, 'you may invoke the service, not run its steps');
      const asScheduler = await fetch(`${url}/tasks/order/charge`, { method: 'POST', headers: { authorization: `Bearer ${issuer.sign(idTokenClaims({ aud: url, email: SCHEDULER }))}`, ...step }, body: '{}' });
      assert.equal(asScheduler.status, 403, 'nor the scheduler’s account');
      const forged = `${encode({ alg: 'RS256', kid: issuer.key.kid })}.${encode(idTokenClaims({ aud: url, email: ACCOUNT }))}.${STRIPPED}`;
      // Your own token where Cloud Run checks first, a forged tasks token in Authorization, which Cloud Run then passes on untouched.
      const smuggled = await fetch(`${url}/tasks/order/charge`, { method: 'POST', headers: { 'x-serverless-authorization': you().authorization, authorization: `Bearer ${forged}`, ...step }, body: '{}' });
      assert.equal(smuggled.status, 403, 'the app reads the token Cloud Run checked');
      const atFront = await fetch(`${url}/tasks/order/charge`, { method: 'POST', headers: { authorization: `Bearer ${forged}`, ...step }, body: '{}' });
      assert.equal(atFront.status, 401);
      assert.deepEqual(front.log.filter((e) => e.path === '/tasks/order/charge' && e.status !== 200).map((e) => [e.status, e.by]), [[403, 'app'], [403, 'app'], [403, 'app'], [401, 'front']]);
      assert.ok(lines(service.stdout() + service.stderr()).some((l) => /token email you@example\.com is not an allowed service account/.test(JSON.stringify(l))), 'the refusal is logged with its reason');
    });

    it('shuts the Locker down, then the server, and exits 0 on SIGTERM', async () => {
      await dispatcher.stop();
      process.kill(service.child.pid!, 'SIGTERM');
      assert.equal(await service.exited, 0);
      const said = lines(service.stdout()).map((l) => l.message);
      assert.deepEqual(said.slice(said.indexOf('SIGTERM: shutting down')), ['SIGTERM: shutting down', 'locker shut down', 'stopped']);
    });
  });

  describe('deployed public (CLOUD_RUN_AUTH=public, --allow-unauthenticated), behind a front that checks nothing', () => {
    let front: CloudRunFront;
    let service: Service;
    before(async () => {
      const port = await freePort();
      front = await startCloudRunFront({ upstream: `http://127.0.0.1:${port}`, auth: 'public', timeoutMs: TIMEOUT_SECONDS * 1000 });
      service = run(deployEnv(front.url, { PORT: String(port), CLOUD_RUN_AUTH: 'public', DATASTORE_EMULATOR_HOST: '127.0.0.1:9' }));
      await listening(service);
    });
    after(async () => {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await front.close();
    });

    it('refuses a forged token whose signature claims Cloud Run removed it, on the task routes and the sweep', async () => {
      for (const [route, email] of [['/tasks/order/charge', ACCOUNT], ['/sweep', SCHEDULER]] as const) {
        const forged = `${encode({ alg: 'RS256', typ: 'JWT', kid: 'any' })}.${encode(idTokenClaims({ aud: front.url, email }))}.${STRIPPED}`;
        const res = await fetch(`${front.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${forged}`, 'x-lock-key': 'x', 'x-lock-seq': '1' }, body: '{}' });
        assert.equal(res.status, 401, route);
      }
      assert.deepEqual(front.log.map((e) => [e.status, e.by]), [[401, 'app'], [401, 'app']]);
      assert.equal(lines(service.stdout()).filter((l) => /trusting Cloud Run's IAM front/.test(String(l.message))).length, 0, 'public: nothing trusts a front');
    });
  });
});

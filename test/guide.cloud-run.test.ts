/**
 * The Cloud Run guide's main.ts (docs/guides/cloud-run/main.ts) is what the guide shows, verbatim;
 * it type-checks against the library; and it runs: a child process on the Datastore emulator, its
 * tasks created through the real CloudTasksClient on the loopback Cloud Tasks server and delivered
 * by this test as Cloud Tasks would (a POST with the task's headers, body and an OIDC token signed
 * by the loopback issuer), its alerts mailed to a loopback SMTP server. A first chain runs end to
 * end, a step failed for good is mailed, the sweep takes Scheduler's token, a missing variable is
 * one clear line and a non-zero exit, and SIGTERM stops it with exit code 0.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { startCloudTasksServer, type CloudTasksServer, type ReceivedCall } from './support/cloud-tasks-server';
import { idTokenClaims, startOidcIssuer, type OidcIssuer } from './support/oidc-issuer';
import { TestSmtpServer } from './support/smtp';
import { uniqueNamespace } from './support/emulator';
import { waitFor } from './support/example-process';
import { freePort } from './support/free-port';

const ROOT = path.resolve(__dirname, '..');
const SOURCE = path.join(ROOT, 'docs', 'guides', 'cloud-run', 'main.ts');
const GUIDE = path.join(ROOT, 'docs', 'guides', 'deploy-cloud-run.md');
const DIR = path.join(ROOT, 'test', '.guide-main');
const COPY = path.join(DIR, 'main.ts');
const LAUNCHER = path.join(ROOT, 'test', 'support', 'cloud-run-launcher.ts');
const ACCOUNT = 'tasks@demo-project.iam.gserviceaccount.com';
const TIMEOUT_SECONDS = 600;

const source = readFileSync(SOURCE, 'utf8');

/** The guide's service as a child process, its output captured. */
interface Service {
  child: ChildProcess;
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
}

function run(env: Record<string, string>): Service {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PORT|GOOGLE_CLOUD_PROJECT|TASKS_.*|SERVICE_URL|SMTP_URL|ALERT_.*|REQUEST_TIMEOUT_SECONDS|DATASTORE_NAMESPACE|K_SERVICE)$/.test(name)));
  const child = spawn(process.execPath, ['--import', 'tsx', LAUNCHER], {
    cwd: ROOT, env: { ...clean, METADATA_SERVER_DETECTION: 'none', GUIDE_MAIN: COPY, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
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

  it('stops with one line naming the missing SMTP variable and a non-zero exit', async () => {
    const service = run({
      PORT: '0', GOOGLE_CLOUD_PROJECT: 'demo', TASKS_LOCATION: 'europe-west1', TASKS_QUEUE: 'steps',
      SERVICE_URL: 'https://orders.example.com', TASKS_SERVICE_ACCOUNT: ACCOUNT, ALERT_TO: 'ops@example.com', ALERT_FROM: 'locker@example.com',
      OIDC_TEST_ISSUER: 'http://127.0.0.1:9', CLOUD_TASKS_TEST_PORT: '9',
    });
    assert.equal(await service.exited, 2);
    const errors = lines(service.stderr());
    assert.equal(errors.length, 1, service.stderr());
    assert.equal(errors[0]!.severity, 'ERROR');
    assert.match(String(errors[0]!.message), /^configuration error: SMTP_URL is not set: set it to the SMTP server alerts are sent through/);
    assert.doesNotMatch(service.stderr(), /\n\s+at /, 'no stack trace');
  });

  it('refuses a request timeout too short for a lease, naming the variable', async () => {
    const service = run({
      PORT: '0', GOOGLE_CLOUD_PROJECT: 'demo', TASKS_LOCATION: 'europe-west1', TASKS_QUEUE: 'steps', SERVICE_URL: 'https://orders.example.com',
      TASKS_SERVICE_ACCOUNT: ACCOUNT, SMTP_URL: 'smtp://127.0.0.1:9', ALERT_TO: 'ops@example.com', ALERT_FROM: 'locker@example.com',
      REQUEST_TIMEOUT_SECONDS: '60', OIDC_TEST_ISSUER: 'http://127.0.0.1:9', CLOUD_TASKS_TEST_PORT: '9',
    });
    assert.equal(await service.exited, 2);
    assert.match(String(lines(service.stderr())[0]?.message), /^configuration error: REQUEST_TIMEOUT_SECONDS must be the service's --timeout, 90 to 1800/);
  });

  describe('run against the Datastore emulator, the loopback Cloud Tasks server, an OIDC issuer and an SMTP server', { skip: process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)' }, () => {
    let tasks: CloudTasksServer;
    let issuer: OidcIssuer;
    let smtp: TestSmtpServer;
    let service: Service;
    let url: string;
    let delivering = true;
    const answers: Array<{ path: string; status: number }> = [];

    /** Cloud Tasks, as far as this test needs it: delivers every created task until it answers 2xx. */
    async function deliverLoop(): Promise<void> {
      const done = new Set<ReceivedCall>();
      while (delivering) {
        for (const call of [...tasks.calls]) {
          if (done.has(call)) continue;
          const http = call.task?.httpRequest;
          assert.ok(http?.url && http.oidcToken?.serviceAccountEmail && http.oidcToken.audience, 'an HTTP task with an OIDC token');
          const token = issuer.sign(idTokenClaims({ aud: http.oidcToken.audience, email: http.oidcToken.serviceAccountEmail }));
          const name = call.task?.name?.split('/').pop() ?? '';
          const res = await fetch(http.url, {
            method: 'POST',
            headers: { ...http.headers, authorization: `Bearer ${token}`, 'x-cloudtasks-queuename': 'steps', 'x-cloudtasks-taskname': name },
            body: http.body,
          }).catch(() => undefined);
          answers.push({ path: new URL(http.url).pathname, status: res?.status ?? 0 });
          if (res && res.status >= 200 && res.status < 300) done.add(call);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    let loop: Promise<void>;
    before(async () => {
      [tasks, issuer, smtp] = await Promise.all([startCloudTasksServer(), startOidcIssuer(), TestSmtpServer.start()]);
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      service = run({
        PORT: String(port), GOOGLE_CLOUD_PROJECT: process.env.DATASTORE_PROJECT_ID ?? 'locker-test', TASKS_LOCATION: 'europe-west1',
        TASKS_QUEUE: 'steps', SERVICE_URL: url, TASKS_SERVICE_ACCOUNT: ACCOUNT, DATASTORE_NAMESPACE: uniqueNamespace('guide'),
        SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, ALERT_TO: 'ops@example.com', ALERT_FROM: 'locker@example.com',
        REQUEST_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS), OIDC_TEST_ISSUER: issuer.baseUrl, CLOUD_TASKS_TEST_PORT: String(tasks.port),
      });
      await waitFor('the service to listen', async () => {
        if (service.child.exitCode !== null) throw new Error(`exited ${service.child.exitCode}: ${service.stderr()}`);
        return lines(service.stdout()).some((l) => l.message === 'listening') ? true : undefined;
      }, 30_000);
      loop = deliverLoop();
    });
    after(async () => {
      delivering = false;
      await loop;
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
      await Promise.all([tasks.close(), issuer.close(), smtp.stop()]);
    });

    it('runs a first chain end to end through real task requests', async () => {
      const started = await fetch(`${url}/orders/o-1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountCents: 1200 }) });
      assert.equal(started.status, 202);
      const order = await waitFor('order o-1 to complete', async () => {
        const body = (await (await fetch(`${url}/orders/o-1`)).json()) as Record<string, unknown>;
        return body.state === 'complete' ? body : undefined;
      });
      assert.equal(order.charged, true);
      assert.equal(order.receiptSent, true);
      assert.equal(order.amountCents, 1200);
      const created = tasks.calls.map((c) => c.task?.httpRequest);
      assert.deepEqual(created.map((h) => new URL(h!.url!).pathname), ['/tasks/order/charge', '/tasks/order/receipt']);
      for (const h of created) assert.deepEqual(h!.oidcToken, { serviceAccountEmail: ACCOUNT, audience: url });
      assert.deepEqual(tasks.calls.map((c) => c.task?.dispatchDeadline?.seconds), [TIMEOUT_SECONDS, TIMEOUT_SECONDS], 'the dispatch deadline is the service’s timeout');
      assert.deepEqual(answers.map((a) => a.status), [200, 200], 'each task was answered once, 200');
      assert.equal((await fetch(`${url}/orders/o-1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amountCents":5}' })).status, 202, 'a finished order can start again');
    });

    it('mails the alert of a step failed for good', async () => {
      const started = await fetch(`${url}/orders/o-2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountCents: 5_000_000 }) });
      assert.equal(started.status, 202);
      const mail = await waitFor('the failure alert', async () => smtp.messages.find((m) => m.text.includes('o-2')));
      assert.deepEqual(mail.envelope.to, ['ops@example.com']);
      assert.match(mail.text, /the provider refuses 5000000 cents/);
      const order = (await (await fetch(`${url}/orders/o-2`)).json()) as Record<string, unknown>;
      assert.equal(order.state, 'failed');
      assert.equal(order.charged, false);
    });

    it('refuses task and sweep requests without the tasks account’s token, and sweeps with it', async () => {
      const forged = await fetch(`${url}/tasks/order/charge`, { method: 'POST', headers: { 'x-lock-key': 'x', 'x-lock-seq': '1' } });
      assert.equal(forged.status, 401);
      assert.equal((await fetch(`${url}/sweep`, { method: 'POST' })).status, 401);
      const token = issuer.sign(idTokenClaims({ aud: url, email: ACCOUNT }));
      const swept = await fetch(`${url}/sweep`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      assert.equal(swept.status, 200);
      assert.deepEqual(Object.keys((await swept.json()) as object).sort(), ['alerted', 'cleared', 'failed', 'malformed', 'resent', 'waiting']);
      assert.equal((await fetch(`${url}/orders/o-3`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amountCents":-1}' })).status, 400);
    });

    it('shuts the Locker down, then the server, and exits 0 on SIGTERM', async () => {
      process.kill(service.child.pid!, 'SIGTERM');
      assert.equal(await service.exited, 0);
      const said = lines(service.stdout()).map((l) => l.message);
      assert.deepEqual(said.slice(said.indexOf('SIGTERM: shutting down')), ['SIGTERM: shutting down', 'locker shut down', 'stopped']);
    });
  });
});

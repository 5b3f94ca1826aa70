/**
 * The example app as a new user meets it: started as a child process, its two autostarted chains
 * watched through /status.json until they are complete; its configuration from the environment;
 * its App Engine bundle. No emulator is needed (one more run uses the Datastore emulator when
 * `npm test` started one).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import { ConfigError, ERRORS_REFERENCE_URL } from '../../src/errors/errors';
import { readConfig, type Env } from '../../example-app/config';
import { COUNTER_STEPS, FORGED_STEP } from '../../example-app/chains';
import type { AnswerCounts, ChainStatus } from '../../example-app/status';
import { exampleEnv, fetchStatus, ROOT, runExample, startExample, waitFor, type ExampleProcess } from '../support/example-process';

/** The autostarted counter and order chains, once both are complete and the forged duplicate was dropped. */
async function demoDone(url: string, keys?: { counter: string; order: string }): Promise<{ counter: ChainStatus; order: ChainStatus }> {
  return waitFor('the autostarted counter and order chains to complete', async () => {
    const { chains } = await fetchStatus(url);
    const counter = chains.find((c) => (keys ? c.key === keys.counter : c.kind === 'Counter'));
    const order = chains.find((c) => (keys ? c.key === keys.order : c.kind === 'Order'));
    const dropped = counter?.steps.find((s) => s.seq === FORGED_STEP)?.dropped ?? 0;
    return counter?.state === 'complete' && order?.state === 'complete' && dropped > 0 ? { counter, order } : undefined;
  });
}

/** What both chains must show: every step's side effect ran once, the duplicate was dropped, the charge was retried. */
function assertRanOnce(counter: ChainStatus, order: ChainStatus): void {
  assert.equal(counter.kind, 'Counter');
  assert.equal(counter.state, 'complete');
  assert.equal(counter.seq, COUNTER_STEPS + 1, 'lock_seq is one past the last step');
  assert.deepEqual(counter.steps.map((s) => [s.seq, s.runs, s.attempts]), Array.from({ length: COUNTER_STEPS }, (_, i) => [i + 1, 1, 1]));
  assert.deepEqual(counter.steps.map((s) => s.effect), Array.from({ length: COUNTER_STEPS }, (_, i) => `counted step ${i + 1}`));
  assert.deepEqual(counter.steps.map((s) => [s.seq, s.dropped]).filter(([, d]) => d !== 0), [[FORGED_STEP, 1]], 'only the forged duplicate of step 6 was dropped');

  assert.equal(order.kind, 'Order');
  assert.equal(order.state, 'complete');
  assert.equal(order.seq, 4);
  assert.deepEqual(order.steps.map(({ seq, effect, runs, attempts, dropped }) => ({ seq, effect, runs, attempts, dropped })), [
    { seq: 1, effect: 'charged', runs: 1, attempts: 2, dropped: 0 },
    { seq: 2, effect: 'emailed', runs: 1, attempts: 1, dropped: 0 },
    { seq: 3, effect: 'archived', runs: 1, attempts: 1, dropped: 0 },
  ]);
  for (const chain of [counter, order]) {
    assert.equal(chain.holder, '', `${chain.key} holds no lease once complete`);
    assert.equal(chain.retries, 0);
    assert.equal(chain.lastError, '');
  }
}

function occurrences(text: string, line: string): number {
  return text.split('\n').filter((l) => l === line).length;
}

describe('example app, run as a child process (embedded store and dispatcher)', () => {
  let app: ExampleProcess;
  let counter: ChainStatus;
  let order: ChainStatus;

  before(async () => {
    app = await startExample();
    ({ counter, order } = await demoDone(app.url));
  });
  after(async () => {
    await app?.stop();
  });

  it('ran each of the counter chain’s ten steps once, and each step of the order once (the charge after one retry)', () => {
    assertRanOnce(counter, order);
  });

  it('dropped the forged duplicate of step 6, and said so in its log', () => {
    const out = app.stdout();
    assert.match(out, new RegExp(`^counter ${escapeRegExp(counter.key)} step 6 ran, so the app sent a forged duplicate of it \\(task forged-[0-9a-f-]+\\)$`, 'm'));
    assert.equal(occurrences(out, `counter ${counter.key} duplicate of step 6 dropped (finished)`), 1);
  });

  it('printed one line per step as it ran', () => {
    const out = app.stdout();
    for (let step = 1; step <= COUNTER_STEPS; step++) {
      assert.equal(occurrences(out, `counter ${counter.key} step ${step} ran`), 1, `step ${step} printed once`);
    }
    assert.equal(occurrences(out, `counter ${counter.key} step ${COUNTER_STEPS + 1} ran`), 0);
    assert.equal(occurrences(out, `order ${order.key} step 1 charge failed on attempt 1; it will be retried`), 1);
    assert.equal(occurrences(out, `order ${order.key} step 1 ran: charged 25.00 on attempt 2`), 1);
    assert.equal(occurrences(out, `order ${order.key} step 2 ran: emailed the receipt to customer@example.com`), 1);
    assert.equal(occurrences(out, `order ${order.key} step 3 ran: archived`), 1);
    assert.doesNotMatch(app.stderr(), /^\s+at /m, 'no stack trace was printed');
  });

  it('serves the status page as HTML, every value escaped', async () => {
    const response = await fetch(`${app.url}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    const html = await response.text();
    assert.match(html, /<title>datastore-locker example<\/title>/, 'the library\'s status router serves the page');
    for (const chain of [counter, order]) {
      const escaped = chain.key.replaceAll('"', '&quot;');
      assert.ok(html.includes(`<tr data-key="${chain.encodedKey}" data-state="complete"`), `row of ${chain.key}`);
      assert.ok(html.includes(`">${escaped}</a>`), `link to ${chain.key}`);
      assert.ok(!html.includes(chain.key), `the raw key ${chain.key} (with its quotes) never appears unescaped`);
    }
    assert.match(html, /<td data-label="Side effects">1 counted ×1 · 2 counted ×1 · 3 counted ×1 · 4 counted ×1 · 5 counted ×1 · 6 counted ×1 \(1 duplicate dropped\)/);
    assert.match(html, /<td data-label="Side effects">1 charged ×1 \(2 attempts\) · 2 emailed ×1 · 3 archived ×1<\/td>/);
    assert.match(html, /<form method="post" action="\/start\/counter">/);
    assert.match(html, /<form method="post" action="\/start\/order">/);
  });

  it('starts a new chain on POST /start/counter (JSON for fetch, a redirect for a form) and runs it to completion', async () => {
    const started = await fetch(`${app.url}/start/counter`, { method: 'POST', headers: { accept: 'application/json' } });
    assert.equal(started.status, 201);
    const ref = (await started.json()) as { kind: string; name: string };
    assert.equal(ref.kind, 'Counter');
    const key = `Counter:${JSON.stringify(ref.name)}`;
    const done = await waitFor(`${key} to complete`, async () => (await fetchStatus(app.url)).chains.find((c) => c.key === key && c.state === 'complete'));
    assert.deepEqual(done.steps.map((s) => s.runs), Array(COUNTER_STEPS).fill(1));

    const form = await fetch(`${app.url}/start/order`, { method: 'POST', headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' }, body: '', redirect: 'manual' });
    assert.equal(form.status, 303);
    assert.equal(form.headers.get('location'), '/');
    const orders = await waitFor('a second order chain to complete', async () => {
      const found = (await fetchStatus(app.url)).chains.filter((c) => c.kind === 'Order');
      return found.length === 2 && found.every((c) => c.state === 'complete') ? found : undefined;
    });
    assert.equal(orders[1]!.key, order.key, 'the newest chain is listed first');
  });

  it('refuses a task request that did not come from its queue, before touching the store', async () => {
    const before = await fetchStatus(app.url);
    const forged = await fetch(`${app.url}/tasks/counter`, { method: 'POST', headers: { 'x-lock-key': 'anything', 'x-lock-seq': '1' } });
    assert.equal(forged.status, 401);
    const sweep = await fetch(`${app.url}/sweep`, { method: 'POST' });
    assert.equal(sweep.status, 401);
    const cron = await fetch(`${app.url}/sweep`, { headers: { 'x-appengine-cron': 'true' } });
    assert.equal(cron.status, 404, 'outside App Engine the cron header proves nothing: there is no GET /sweep');
    const after = await fetchStatus(app.url);
    assert.deepEqual(after.chains, before.chains);
    assert.equal(answers(after).byReason.unauthenticated ?? 0, (answers(before).byReason.unauthenticated ?? 0) + 1, 'the refused task request is counted, and why');
    assert.equal(answers(after).total, answers(before).total + 1, 'the sweep route is not a task route');
  });

  it('answers 405 to anything but a POST on a task route, as the life-of-a-step table says', async () => {
    for (const path of ['/tasks/counter', '/tasks/order/charge', '/tasks/order/email', '/tasks/order/archive']) {
      const got = await fetch(`${app.url}${path}`);
      assert.equal(got.status, 405, `GET ${path}`);
      assert.equal(await got.text(), 'task requests are POSTs');
    }
    assert.equal((await fetch(`${app.url}/tasks/counter`, { method: 'PUT' })).status, 405);
  });

  it('shuts down cleanly on SIGTERM', async () => {
    const code = await app.stop();
    assert.equal(code, 0);
    assert.match(app.stdout(), /^SIGTERM received: shutting down$/m);
    assert.match(app.stdout(), /^datastore-locker example stopped$/m);
  });
});

describe('example app deployed without EXAMPLE_IAP_AUDIENCE (K_SERVICE set)', () => {
  it('runs its chains but opens neither the status page nor the routes that start chains', async () => {
    const app = await startExample({ K_SERVICE: 'example' });
    try {
      await waitFor('the order chain to finish', async () => (/^order .* step 3 ran: archived$/m.test(app.stdout()) ? true : undefined));
      for (const path of ['/', '/steps.json', '/status.json']) {
        const res = await fetch(`${app.url}${path}`);
        assert.equal(res.status, 403, path);
        assert.doesNotMatch(await res.text(), /Counter|Order/, `${path} shows nothing`);
      }
      const start = await fetch(`${app.url}/start/counter`, { method: 'POST', headers: { accept: 'application/json' } });
      assert.equal(start.status, 403);
      assert.equal(app.stdout().match(/^counter .* started$/gm)?.length, 1, 'only the autostarted counter chain started');
    } finally {
      await app.stop();
    }
  });
});

describe('example app on App Engine (GAE_APPLICATION set): the cron sweep', () => {
  it('answers cron.yaml’s GET with the library’s sweep route, only with X-Appengine-Cron: true', async () => {
    const cron = readFileSync(path.join(ROOT, 'cron.yaml'), 'utf8');
    const url = /^\s+url: (\S+)$/m.exec(cron)?.[1];
    assert.equal(url, '/sweep');
    const app = await startExample({ GAE_APPLICATION: 'e~demo', GAE_SERVICE: 'default', EXAMPLE_AUTOSTART: '0' });
    try {
      const swept = await fetch(`${app.url}${url}`, { headers: { 'x-appengine-cron': 'true' } });
      assert.equal(swept.status, 200);
      assert.deepEqual(Object.keys((await swept.json()) as object).sort(), ['alerted', 'cleared', 'failed', 'malformed', 'recurring', 'resent', 'waiting']);
      const forged = await fetch(`${app.url}${url}`);
      assert.equal(forged.status, 401, 'a GET without the cron header is refused');
      const task = await fetch(`${app.url}${url}`, { headers: { 'x-appengine-queuename': 'locker' } });
      assert.equal(task.status, 401, 'a task queue’s header does not open the cron route');
      const post = await fetch(`${app.url}${url}`, { method: 'POST', headers: { 'x-appengine-cron': 'true' } });
      assert.equal(post.status, 401, 'the POST route keeps the task authenticator (Cloud Scheduler’s)');
    } finally {
      assert.equal(await app.stop(), 0);
    }
  });
});

describe('example app with EXAMPLE_AUTOSTART=0', () => {
  it('starts no chain', async () => {
    const app = await startExample({ EXAMPLE_AUTOSTART: '0' });
    try {
      assert.deepEqual(await fetchStatus(app.url), { chains: [], cut: [], unfinishedAtStart: [], answers: { total: 0, byReason: {}, byStatus: {} } });
      const html = await (await fetch(`${app.url}/`)).text();
      assert.match(html, /<p class="empty">No steps to show.<\/p>/);
    } finally {
      assert.equal(await app.stop(), 0);
    }
  });
});

describe('example app configuration errors', () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['a missing companion variable', { CLOUD_TASKS_QUEUE: 'locker', GOOGLE_CLOUD_PROJECT: 'demo' }, /CLOUD_TASKS_QUEUE is set but CLOUD_TASKS_LOCATION is not/],
    ['a bad number', { PORT: 'eighty' }, /PORT must be a whole number from 0 to 65535; got "eighty"/],
    ['a ConfigError from the library', {
      CLOUD_TASKS_QUEUE: 'no spaces allowed', CLOUD_TASKS_LOCATION: 'europe-west1', GOOGLE_CLOUD_PROJECT: 'demo',
      CLOUD_TASKS_URL: 'https://example.com', CLOUD_TASKS_SERVICE_ACCOUNT: 'tasks@demo.iam.gserviceaccount.com',
    }, /CloudTasksQueue: `queue` must be a queue id/],
  ];
  for (const [what, env, message] of cases) {
    it(`exits with code 2 and one line on stderr for ${what}`, async () => {
      const run = await runExample(env);
      assert.equal(run.code, 2, `exit code; stderr: ${run.stderr}`);
      const lines = run.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, `one line, no stack trace: ${run.stderr}`);
      assert.match(lines[0]!, /^configuration error: /);
      assert.match(lines[0]!, message);
      assert.doesNotMatch(run.stdout, /listening/);
    });
  }
});

describe('example-app/config.ts: the environment in, the configuration out', () => {
  const read = (env: Env) => readConfig(env);
  // A ConfigError's message ends with its link to the errors reference; the sentence before it is the example's.
  const link = ` (${ERRORS_REFERENCE_URL}#configerror)`;
  const fails = (env: Env, message: RegExp) => assert.throws(() => read(env),
    (e: unknown) => e instanceof ConfigError && e.message.endsWith(link) && message.test(e.message.slice(0, -link.length)));

  it('runs embedded by default: in-memory store, local dispatcher, port 8080 on loopback (every interface on App Engine and Cloud Run)', () => {
    assert.equal(read({ K_SERVICE: 'demo' }).host, '0.0.0.0');
    assert.equal(read({ GAE_APPLICATION: 'e~demo' }).host, '0.0.0.0');
    assert.equal(read({ K_SERVICE: 'demo', HOST: '127.0.0.1' }).host, '127.0.0.1');
    assert.deepEqual(read({}), {
      port: 8080, host: '127.0.0.1', autostart: true, maxRetries: 5, leaseDurationMs: 10_000, stallAfterMs: 20_000, appEngine: false,
      store: { type: 'memory' }, queue: { type: 'local', sweepIntervalMs: 5_000 }, alert: undefined, operator: { type: 'local' },
    });
  });
  it('reads EXAMPLE_STALL_AFTER_MS and EXAMPLE_LEASE_DURATION_MS, and refuses a stallAfter shorter than the lease', () => {
    const c = read({ EXAMPLE_STALL_AFTER_MS: '1500', EXAMPLE_LEASE_DURATION_MS: '1000' });
    assert.deepEqual([c.stallAfterMs, c.leaseDurationMs], [1500, 1000]);
    assert.equal(read({ EXAMPLE_LEASE_DURATION_MS: '30000' }).stallAfterMs, 30_000, 'the default stallAfter is at least the lease');
    fails({ EXAMPLE_STALL_AFTER_MS: '500', EXAMPLE_LEASE_DURATION_MS: '1000' }, /^EXAMPLE_STALL_AFTER_MS \(500\) must not be less than EXAMPLE_LEASE_DURATION_MS/);
    fails({ EXAMPLE_STALL_AFTER_MS: 'soon' }, /^EXAMPLE_STALL_AFTER_MS must be a whole number/);
  });
  it('opens the status page and the start routes to everyone locally, to IAP\'s operators deployed, else to nobody', () => {
    assert.deepEqual(read({ K_SERVICE: 'demo' }).operator, { type: 'closed' });
    assert.deepEqual(read({ HOST: '0.0.0.0' }).operator, { type: 'closed' }, 'listening wider off App Engine and Cloud Run (GKE, a VM, Docker) is not a local run');
    assert.deepEqual(read({ HOST: '::' }).operator, { type: 'closed' });
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) assert.deepEqual(read({ HOST: host }).operator, { type: 'local' }, host);
    assert.deepEqual(read({ GAE_APPLICATION: 'e~demo' }).operator, { type: 'closed' });
    assert.deepEqual(read({ GAE_APPLICATION: 'e~demo', EXAMPLE_IAP_AUDIENCE: '/projects/1/apps/demo', EXAMPLE_OPERATORS: 'a@example.com, @example.org' }).operator, {
      type: 'iap', audience: '/projects/1/apps/demo', allow: ['a@example.com', '@example.org'],
    });
    assert.deepEqual(read({ EXAMPLE_IAP_AUDIENCE: '/projects/1/apps/demo' }).operator, { type: 'iap', audience: '/projects/1/apps/demo', allow: undefined });
    fails({ EXAMPLE_IAP_AUDIENCE: 'demo' }, /^EXAMPLE_IAP_AUDIENCE must be IAP's audience/);
    fails({ EXAMPLE_OPERATORS: 'a@example.com' }, /^EXAMPLE_OPERATORS is set but EXAMPLE_IAP_AUDIENCE is not/);
  });
  it('reads PORT (0 picks a free port), HOST, EXAMPLE_AUTOSTART, EXAMPLE_MAX_RETRIES and EXAMPLE_SWEEP_INTERVAL_MS', () => {
    const c = read({ PORT: '0', HOST: '127.0.0.1', EXAMPLE_AUTOSTART: 'false', EXAMPLE_MAX_RETRIES: '3', EXAMPLE_SWEEP_INTERVAL_MS: '250' });
    assert.deepEqual([c.port, c.host, c.autostart, c.maxRetries, c.queue], [0, '127.0.0.1', false, 3, { type: 'local', sweepIntervalMs: 250 }]);
    assert.equal(read({ EXAMPLE_AUTOSTART: '1' }).autostart, true);
  });
  it('treats an empty or blank variable as unset', () => {
    assert.deepEqual(read({ PORT: '', HOST: '  ', GOOGLE_CLOUD_PROJECT: '', CLOUD_TASKS_QUEUE: ' ' }), read({}));
  });
  it('refuses numbers and flags it cannot read, naming the variable', () => {
    fails({ PORT: '-1' }, /^PORT must be a whole number from 0 to 65535; got "-1"\.$/);
    fails({ PORT: '65536' }, /^PORT must be/);
    fails({ PORT: '80.5' }, /^PORT must be/);
    fails({ EXAMPLE_MAX_RETRIES: '1' }, /^EXAMPLE_MAX_RETRIES must be a whole number from 2 to 100/);
    fails({ EXAMPLE_SWEEP_INTERVAL_MS: 'often' }, /^EXAMPLE_SWEEP_INTERVAL_MS must be/);
    fails({ EXAMPLE_AUTOSTART: 'maybe' }, /^EXAMPLE_AUTOSTART must be 1 or 0/);
  });
  it('uses Datastore when GOOGLE_CLOUD_PROJECT is set, in EXAMPLE_NAMESPACE', () => {
    assert.deepEqual(read({ GOOGLE_CLOUD_PROJECT: 'demo', EXAMPLE_NAMESPACE: 'ex' }).store, { type: 'datastore', projectId: 'demo', namespace: 'ex', emulatorHost: undefined });
    assert.deepEqual(read({ GOOGLE_CLOUD_PROJECT: 'demo' }).store, { type: 'datastore', projectId: 'demo', namespace: undefined, emulatorHost: undefined });
  });
  it('uses the Datastore emulator when DATASTORE_EMULATOR_HOST is set, with a project from GOOGLE_CLOUD_PROJECT or DATASTORE_PROJECT_ID', () => {
    assert.deepEqual(read({ DATASTORE_EMULATOR_HOST: '127.0.0.1:8081', DATASTORE_PROJECT_ID: 'emu' }).store, { type: 'datastore', projectId: 'emu', namespace: undefined, emulatorHost: '127.0.0.1:8081' });
    assert.equal((read({ DATASTORE_EMULATOR_HOST: 'h:1', DATASTORE_PROJECT_ID: 'emu', GOOGLE_CLOUD_PROJECT: 'gcp' }).store as { projectId: string }).projectId, 'gcp');
    fails({ DATASTORE_EMULATOR_HOST: '127.0.0.1:8081' }, /^DATASTORE_EMULATOR_HOST is set but no project is: set GOOGLE_CLOUD_PROJECT/);
    assert.deepEqual(read({ DATASTORE_PROJECT_ID: 'emu' }).store, { type: 'memory' }, 'a project id alone does not leave the embedded store');
  });
  it('refuses EXAMPLE_NAMESPACE with the in-memory store', () => {
    fails({ EXAMPLE_NAMESPACE: 'ex' }, /^EXAMPLE_NAMESPACE is set, but the in-memory store has no namespaces/);
  });
  it('uses a Cloud Tasks HTTP target with OIDC when CLOUD_TASKS_QUEUE is set off App Engine', () => {
    const c = read({
      GOOGLE_CLOUD_PROJECT: 'demo', CLOUD_TASKS_QUEUE: 'locker', CLOUD_TASKS_LOCATION: 'europe-west1',
      CLOUD_TASKS_URL: 'https://app.example.com', CLOUD_TASKS_SERVICE_ACCOUNT: 'tasks@demo.iam.gserviceaccount.com',
    });
    assert.deepEqual(c.queue, {
      type: 'cloud-tasks', project: 'demo', location: 'europe-west1', queue: 'locker',
      target: { type: 'http', url: 'https://app.example.com', serviceAccountEmail: 'tasks@demo.iam.gserviceaccount.com', auth: 'oidc', schedulerAccount: undefined, emulatorHost: undefined },
    });
    assert.equal(c.appEngine, false);
  });
  it('on Cloud Run, asks how it was deployed (CLOUD_RUN_AUTH) and refuses App Engine targets', () => {
    const base = {
      K_SERVICE: 'example', GOOGLE_CLOUD_PROJECT: 'demo', CLOUD_TASKS_QUEUE: 'locker', CLOUD_TASKS_LOCATION: 'europe-west1',
      CLOUD_TASKS_URL: 'https://app.example.com', CLOUD_TASKS_SERVICE_ACCOUNT: 'tasks@demo.iam.gserviceaccount.com',
    };
    fails(base, /^CLOUD_RUN_AUTH is not set: on Cloud Run set it to iam/);
    fails({ ...base, CLOUD_RUN_AUTH: 'private' }, /^CLOUD_RUN_AUTH must be iam/);
    const iam = read({ ...base, CLOUD_RUN_AUTH: 'iam', SCHEDULER_SERVICE_ACCOUNT: 'sweep@demo.iam.gserviceaccount.com' });
    assert.deepEqual(iam.queue.type === 'cloud-tasks' && iam.queue.target.type === 'http' && [iam.queue.target.auth, iam.queue.target.schedulerAccount], ['cloud-run-iam', 'sweep@demo.iam.gserviceaccount.com']);
    const pub = read({ ...base, CLOUD_RUN_AUTH: 'public' });
    assert.equal(pub.queue.type === 'cloud-tasks' && pub.queue.target.type === 'http' && pub.queue.target.auth, 'oidc');
    const { CLOUD_TASKS_URL: _url, CLOUD_TASKS_SERVICE_ACCOUNT: _sa, ...noHttp } = base;
    fails({ ...noHttp, CLOUD_TASKS_TARGET: 'appengine' }, /^CLOUD_TASKS_TARGET=appengine runs only on App Engine/);
    const { K_SERVICE: _k, ...offCloudRun } = base;
    fails({ ...offCloudRun, CLOUD_RUN_AUTH: 'iam' }, /^CLOUD_RUN_AUTH is set, but K_SERVICE is not/);
  });
  it('names the missing companion of CLOUD_TASKS_QUEUE', () => {
    const base = { GOOGLE_CLOUD_PROJECT: 'demo', CLOUD_TASKS_QUEUE: 'locker' };
    fails(base, /^CLOUD_TASKS_QUEUE is set but CLOUD_TASKS_LOCATION is not: set it to e\.g\. europe-west1\.$/);
    fails({ CLOUD_TASKS_QUEUE: 'locker', CLOUD_TASKS_LOCATION: 'europe-west1' }, /^CLOUD_TASKS_QUEUE is set but GOOGLE_CLOUD_PROJECT is not/);
    const located = { ...base, CLOUD_TASKS_LOCATION: 'europe-west1' };
    fails(located, /^CLOUD_TASKS_TARGET is http but CLOUD_TASKS_URL is not/);
    fails({ ...located, CLOUD_TASKS_URL: 'https://app.example.com' }, /^CLOUD_TASKS_TARGET is http but CLOUD_TASKS_SERVICE_ACCOUNT is not/);
    fails({ ...located, CLOUD_TASKS_URL: 'app.example.com', CLOUD_TASKS_SERVICE_ACCOUNT: 'a@b' }, /^CLOUD_TASKS_URL must be an http\(s\) URL/);
    fails({ ...located, CLOUD_TASKS_TARGET: 'grpc' }, /^CLOUD_TASKS_TARGET must be "http" or "appengine"; got "grpc"\.$/);
    fails({ ...located, CLOUD_TASKS_TARGET: 'appengine', GAE_APPLICATION: 'e~demo', CLOUD_TASKS_URL: 'https://app.example.com' }, /^CLOUD_TASKS_URL is set, but App Engine targets use neither/);
    fails({ CLOUD_TASKS_LOCATION: 'europe-west1' }, /^CLOUD_TASKS_LOCATION is set but CLOUD_TASKS_QUEUE is not/);
  });
  it('on App Engine, targets App Engine by default, routed to this service, and enables the cron route', () => {
    const c = read({ GAE_APPLICATION: 'e~demo', GAE_SERVICE: 'worker', GOOGLE_CLOUD_PROJECT: 'demo', CLOUD_TASKS_QUEUE: 'locker', CLOUD_TASKS_LOCATION: 'europe-west1' });
    assert.deepEqual(c.queue, { type: 'cloud-tasks', project: 'demo', location: 'europe-west1', queue: 'locker', target: { type: 'appengine', service: 'worker' } });
    assert.equal(c.appEngine, true);
    const routed = read({ GAE_APPLICATION: 'e~demo', GAE_SERVICE: 'worker', GOOGLE_CLOUD_PROJECT: 'demo', CLOUD_TASKS_QUEUE: 'locker', CLOUD_TASKS_LOCATION: 'europe-west1', CLOUD_TASKS_SERVICE: 'tasks' });
    assert.deepEqual(routed.queue.type === 'cloud-tasks' && routed.queue.target, { type: 'appengine', service: 'tasks' });
  });
  it('reads email alerts from all three ALERT_ variables, or none', () => {
    assert.deepEqual(read({ ALERT_SMTP_URL: 'smtp://127.0.0.1:2525', ALERT_TO: 'a@example.com, b@example.com', ALERT_FROM: 'locker@example.com' }).alert, {
      smtpUrl: 'smtp://127.0.0.1:2525', to: ['a@example.com', 'b@example.com'], from: 'locker@example.com',
    });
    fails({ ALERT_SMTP_URL: 'smtp://127.0.0.1:2525' }, /^ALERT_SMTP_URL is set but ALERT_TO and ALERT_FROM are not: email alerts need all three\.$/);
    fails({ ALERT_TO: 'a@example.com', ALERT_FROM: 'b@example.com' }, /^ALERT_TO and ALERT_FROM are set but ALERT_SMTP_URL is not/);
    fails({ ALERT_SMTP_URL: 'mail.example.com', ALERT_TO: 'a@example.com', ALERT_FROM: 'b@example.com' }, /^ALERT_SMTP_URL must be an SMTP URL such as smtps:/);
  });
  it('reads the environment app.yaml sets on App Engine as Datastore plus a Cloud Tasks App Engine target', () => {
    const yaml = readFileSync(path.join(ROOT, 'app.yaml'), 'utf8');
    const variables = Object.fromEntries([...yaml.matchAll(/^ {2}([A-Z][A-Z0-9_]*): "([^"]*)"$/gm)].map((m) => [m[1]!, m[2]!]));
    assert.ok(Object.keys(variables).length > 0, 'app.yaml sets variables');
    const c = read({ ...variables, GAE_APPLICATION: 'e~demo', GAE_SERVICE: 'default', GOOGLE_CLOUD_PROJECT: 'demo', PORT: '8080' });
    assert.equal(c.store.type, 'datastore');
    assert.equal(c.queue.type === 'cloud-tasks' && c.queue.target.type, 'appengine');
    assert.equal(c.autostart, false);
    assert.match(yaml, /^runtime: nodejs20$/m);
    assert.match(yaml, /^entrypoint: node --enable-source-maps example-app\/dist\/main\.js$/m);
  });
});

describe('example app, bundled for App Engine (npm run gcp-build)', () => {
  let dir: string;
  let app: ExampleProcess | undefined;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'example-bundle-'));
  });
  after(async () => {
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('bundles into one file that runs with plain node and loads only the package’s dependencies', async () => {
    const outfile = path.join(dir, 'main.js');
    execFileSync(process.execPath, [path.join(ROOT, 'example-app', 'build.mjs'), outfile], { cwd: ROOT, stdio: 'pipe' });
    const bundle = readFileSync(outfile, 'utf8');
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>; peerDependencies: Record<string, string>; devDependencies: Record<string, string>; scripts: Record<string, string>;
    };
    // What a production install keeps: dependencies, and the peers that are not devDependencies (npm installs a package's own peers).
    const production = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies).filter((name) => !(name in pkg.devDependencies))]);
    assert.equal(pkg.scripts['gcp-build'], 'node example-app/build.mjs');
    const required = new Set([...bundle.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]!));
    const builtins = new Set(builtinModules);
    const outside = [...required].filter((name) => {
      const bare = name.replace(/^node:/, '');
      const pkgName = name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]!;
      return !builtins.has(bare) && !production.has(pkgName) && name !== 'supports-color';
    });
    assert.deepEqual(outside, [], 'the bundle requires only builtins and the packages a production install keeps (supports-color is optional, inside a try)');

    // Only the production dependencies are reachable, as on App Engine after its reinstall...
    // approximated by NODE_PATH, since the bundle lives outside the repository.
    app = await startExample({}, ['--enable-source-maps', outfile], exampleEnv({ NODE_PATH: path.join(ROOT, 'node_modules') }));
    const { counter, order } = await demoDone(app.url);
    assertRanOnce(counter, order);
    assert.equal(await app.stop(), 0);
  });
});

describe('example app on the Datastore emulator', { skip: process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)' }, () => {
  let app: ExampleProcess | undefined;
  after(async () => {
    await app?.stop();
  });

  it('runs both chains once each with the Datastore store, in its own namespace', async () => {
    const namespace = `example-${process.pid}-${Date.now()}`;
    app = await startExample({
      DATASTORE_EMULATOR_HOST: process.env.DATASTORE_EMULATOR_HOST!,
      DATASTORE_PROJECT_ID: process.env.DATASTORE_PROJECT_ID ?? 'locker-test',
      EXAMPLE_NAMESPACE: namespace,
      METADATA_SERVER_DETECTION: 'none',
    });
    assert.match(app.stdout(), new RegExp(`running on the Datastore emulator at .*, namespace ${namespace}`));
    const { counter, order } = await demoDone(app.url);
    assertRanOnce(counter, order);
    assert.equal(await app.stop(), 0);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The task routes' non-2xx answers counted in /status.json. */
function answers(status: object): AnswerCounts {
  return (status as { answers: AnswerCounts }).answers;
}

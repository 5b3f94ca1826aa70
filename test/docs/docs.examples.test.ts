/**
 * Every documented example that builds a Locker is run, not only type-checked. Each TypeScript
 * block of README.md and docs/ that contains `new Locker(` has a row below saying how it is run
 * and what it must do; a new such block without a row fails the first test. A block runs as a
 * program in a child process (test/support/docs-block-runner.ts), unchanged: its imports of the
 * library and of `@google-cloud/tasks` are pointed at the source and at the loopback Cloud Tasks
 * server (test/support/docs-tasks-client.ts), and what else it needs comes from the environment
 * (the Datastore emulator through DATASTORE_EMULATOR_HOST, PORT, SMTP_URL, GOOGLE_CLOUD_PROJECT).
 * Each row asserts that the block loads without throwing and, where a test can see it, that it
 * does what the page shows: a task created for the URL it names, a route that answers, SIGTERM
 * that stops it, the lines it prints.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Firestore } from '@google-cloud/firestore';
import { docBlocks, docPages, ROOT, type DocBlock } from '../support/doc-blocks';
import { startCloudTasksServer, type CloudTasksServer, type ReceivedCall } from '../support/cloud-tasks-server';
import { freePort } from '../support/free-port';
import { waitFor } from '../support/example-process';
import { closedPort } from '../support/emulator';

const DIR = join(ROOT, 'test', '.docs-examples');
const RUNNER = join(ROOT, 'test', 'support', 'docs-block-runner.ts');

/** A block running as a child process. */
interface Run {
  /** The port it was given in PORT. */
  port: number;
  /** The runner's `DOCS-RUN` report: what the file exports, or what loading it threw. */
  loaded: Promise<{ loaded: boolean; exports?: Record<string, string>; error?: { name: string; message: string } }>;
  /** The runner's `DOCS-PROBE` report. */
  probed: Promise<{ ok: boolean; value?: unknown; error?: string }>;
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
}

/** What a row's check gets. */
interface Rig {
  tasks: CloudTasksServer;
  start(env?: Record<string, string>, probe?: object): Promise<Run>;
}

/** How one documented block is run, and what it must do. */
interface Example {
  page: string;
  /** The block's place among the page's `ts` blocks. */
  index: number;
  /** Text the block contains: says the row and the block are the same one. */
  shows: string;
  /** Where the block is run instead, when another test runs it with more around it. */
  runBy?: string;
  check?: (rig: Rig) => Promise<void>;
}

/** A line a child printed, tagged. */
function tagged<T>(text: string, tag: string): T | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${tag} `));
  return line === undefined ? undefined : (JSON.parse(line.slice(tag.length + 1)) as T);
}

/** Loads, and exports what is named (a Locker, a function). */
async function loads(run: Run, exports: Record<string, string> = {}): Promise<void> {
  const report = await run.loaded;
  assert.equal(report.loaded, true, `the block threw while loading: ${report.error?.name}: ${report.error?.message}\n${run.stderr()}`);
  for (const [name, what] of Object.entries(exports)) assert.equal(report.exports?.[name], what, `exports ${name} as a ${what}`);
}

/** Waits until the block's server answers on its port; resolves with that answer's status. */
function serving(run: Run, path = '/'): Promise<number> {
  return waitFor(`the example to listen on ${run.port}`, async () => (await fetch(`http://127.0.0.1:${run.port}${path}`)).status, 30_000);
}

/** The first CreateTask call made since `from` for a task whose URL (or App Engine URI) ends with `path`. */
function created(tasks: CloudTasksServer, from: number, path: string): Promise<ReceivedCall> {
  const url = (c: ReceivedCall): string => c.task?.httpRequest?.url ?? c.task?.appEngineHttpRequest?.relativeUri ?? '';
  return waitFor(`a CreateTask call for ${path}`, async () => tasks.calls.slice(from).find((c) => url(c).endsWith(path)), 120_000);
}

/** Stops a block that keeps running: SIGTERM where it wires it, then asserts the exit code. */
async function stops(run: Run, code: number | null = 0): Promise<void> {
  run.kill('SIGTERM');
  assert.equal(await run.exited, code, `exit after SIGTERM\n${run.stderr()}`);
}

const EXAMPLES: Example[] = [
  { page: 'README.md', index: 0, shows: "console.log('chain complete')", runBy: 'test/docs/readme.test.ts' },
  {
    page: 'README.md', index: 1, shows: 'cloudRunIamAuthenticator({ audience: url, serviceAccountEmail })',
    async check({ tasks, start }) {
      // Without SMTP_URL it stops at once, naming the variable.
      const bare = await start({ K_SERVICE: 'orders' });
      const refused = await bare.loaded;
      assert.equal(refused.loaded, false);
      assert.match(refused.error?.message ?? '', /SMTP_URL/);
      assert.equal(await bare.exited, 3);
      // With it, the Locker starts a chain on Datastore and creates its task for the service, with the tasks account's token.
      const from = tasks.calls.length;
      const run = await start({ SMTP_URL: `smtp://127.0.0.1:${await closedPort()}`, K_SERVICE: 'orders' }, { schedule: 'locker', path: '/charge' });
      await loads(run, { locker: 'Locker' });
      const probe = await run.probed;
      assert.equal(probe.ok, true, probe.error);
      const call = await created(tasks, from, '/charge');
      assert.equal(call.parent, 'projects/my-project/locations/europe-west1/queues/steps');
      assert.equal(call.task?.httpRequest?.url, 'https://orders-abc123-ew.a.run.app/charge');
      assert.equal(call.task?.httpRequest?.oidcToken?.serviceAccountEmail, 'tasks@my-project.iam.gserviceaccount.com');
    },
  },
  {
    page: 'docs/concepts/alerts.md', index: 0, shows: 'alerter: postToChat',
    async check({ start }) {
      await loads(await start(), { locker: 'Locker' });
    },
  },
  {
    page: 'docs/concepts/shutdown-and-time-limits.md', index: 0, shows: 'export const charge',
    async check({ start }) {
      await loads(await start(), { charge: 'function' });
    },
  },
  {
    page: 'docs/concepts/shutdown-and-time-limits.md', index: 1, shows: "process.once('SIGTERM'",
    async check({ start }) {
      const run = await start();
      await loads(run);
      assert.equal(await serving(run), 404);
      await stops(run); // locker.shutdown(), then the server closes and nothing keeps the process
    },
  },
  {
    page: 'docs/concepts/shutdown-and-time-limits.md', index: 2, shows: "locker.on('retryLater'",
    async check({ start }) {
      await loads(await start());
    },
  },
  {
    page: 'docs/concepts/throttling.md', index: 0, shows: 'lockFailedStatus: 409',
    async check({ start }) {
      await loads(await start(), { locker: 'Locker' });
    },
  },
  {
    page: 'docs/design.md', index: 0, shows: "app.post('/process'",
    async check({ tasks, start }) {
      const from = tasks.calls.length;
      const run = await start({}, { call: 'kickoff', args: [`docs-${process.pid}`] });
      await loads(run, { kickoff: 'function' });
      const probe = await run.probed;
      assert.equal(probe.ok, true, probe.error);
      const call = await created(tasks, from, '/process');
      assert.equal(call.task?.httpRequest?.url, 'https://app.example.com/process');
    },
  },
  {
    page: 'docs/guides/bulk-kickoff.md', index: 0, shows: 'length: 10_000',
    async check({ tasks, start }) {
      // The script starts chains on the emulator, creates their tasks for the service and reports
      // progress. All 10,000 are the benchmark's work (npm run bench:kickoff), not a unit test's:
      // the run stops once the first tasks were created and a progress line printed.
      const from = tasks.calls.length;
      const run = await start();
      await loads(run);
      const call = await created(tasks, from, '/invoice/compute');
      assert.equal(call.task?.httpRequest?.url, 'https://billing-abc123-ew.a.run.app/invoice/compute');
      await waitFor('a progress line', async () => (/\r\d+\/10000 settled: [1-9]\d* started/.test(run.stdout()) ? true : undefined), 120_000);
    },
  },
  {
    page: 'docs/guides/recurring.md', index: 0, shows: "locker.recurring('nightly-payouts'",
    async check({ tasks, start }) {
      // A first tick writes the two schedules (nothing is due yet: each is due from its next tick
      // after now); a second process runs one now, once for its id, through the Cloud Tasks queue.
      // K_SERVICE: the block runs as on Cloud Run, where its authenticators trust the front.
      const cloudRun = { K_SERVICE: 'payouts' };
      const first = await start(cloudRun, { tick: 'locker' });
      await loads(first, { locker: 'Locker' });
      assert.equal(await serving(first, '/feed/poll'), 404, 'the step routes take POSTs only');
      const ticked = await first.probed;
      assert.equal(ticked.ok, true, ticked.error);
      const result = ticked.value as { declared: number; started: number; removed: string[] };
      assert.deepEqual([result.declared, result.started, result.removed], [2, 0, []]);
      first.kill('SIGTERM');
      await first.exited;
      const from = tasks.calls.length;
      const second = await start(cloudRun, { runNow: 'locker', name: 'poll-feed', id: 'docs-run-1' });
      await loads(second);
      const ran = await second.probed;
      assert.equal(ran.ok, true, ran.error);
      assert.equal((ran.value as { outcome: string }).outcome, 'started');
      const call = await created(tasks, from, '/feed/poll');
      assert.equal(call.task?.httpRequest?.url, 'https://payouts-abc123-ew.a.run.app/feed/poll');
      second.kill('SIGTERM');
    },
  },
  { page: 'docs/guides/deploy-app-engine.md', index: 0, shows: 'appEngineCronAuthenticator()', runBy: 'test/docs/guide.app-engine.test.ts' },
  {
    page: 'docs/guides/deploy-app-engine.md', index: 1, shows: 'async function kickoff()',
    async check({ tasks, start }) {
      const from = tasks.calls.length;
      const run = await start();
      await loads(run);
      const call = await created(tasks, from, '/tasks/order/charge');
      assert.equal(call.parent, 'projects/my-project/locations/europe-west1/queues/steps');
      assert.equal(call.task?.appEngineHttpRequest?.relativeUri, '/tasks/order/charge');
      assert.equal(await run.exited, 0, run.stderr());
      assert.match(run.stdout(), /sent: true/);
    },
  },
  { page: 'docs/guides/deploy-cloud-run.md', index: 0, shows: 'async function start(env: NodeJS.ProcessEnv)', runBy: 'test/docs/guide.cloud-run.test.ts' },
  {
    // On the Firestore emulator in Native mode, which this row starts for itself (the lanes run the
    // Datastore-mode emulators only): a request to /orders/o-1 writes the document Order/o-1 with
    // the order and its lock fields, and creates the task for /charge with the tasks account's token.
    page: 'docs/guides/firestore-native.md', index: 0, shows: 'store: new FirestoreStore(firestore)',
    async check({ tasks, start }) {
      const emulators = (await import(pathToFileURL(join(ROOT, 'scripts', 'emulators.mjs')).href)) as {
        startEmulators(names: string[]): Promise<{ firestoreNative?: { host: string }; stop(): Promise<void> }>;
      };
      const native = await emulators.startEmulators(['firestoreNative']);
      const host = native.firestoreNative!.host;
      const firestore = new Firestore({ projectId: 'my-project', host, ssl: false, credentials: { client_email: 'test@example.com', private_key: 'unused' } });
      try {
        // The emulator, just started, is warmed first: under load its first transaction took 2.8 s
        // (0.45 s once warm, two busy cores beside it, 2026-11-29), and the guide's store gives
        // each call 5 s, so a cold one answered the kickoff 503 in CI at b62d831.
        const warm = firestore.doc('Warm/up');
        await firestore.runTransaction(async (tx) => { await tx.get(warm); tx.set(warm, { at: Date.now() }); });
        const run = await start({ FIRESTORE_EMULATOR_HOST: host, GOOGLE_CLOUD_PROJECT: 'my-project', K_SERVICE: 'orders' });
        await loads(run, { locker: 'Locker' });
        assert.equal(await serving(run), 404);
        const from = tasks.calls.length;
        const answer = await fetch(`http://127.0.0.1:${run.port}/orders/o-1`, { method: 'POST' });
        assert.equal(answer.status, 202, run.stderr());
        const call = await created(tasks, from, '/charge');
        assert.equal(call.task?.httpRequest?.url, 'https://orders-abc123-ew.a.run.app/charge');
        assert.equal(call.task?.httpRequest?.oidcToken?.serviceAccountEmail, 'tasks@my-project.iam.gserviceaccount.com');
        const order = (await firestore.doc('Order/o-1').get()).data();
        assert.equal(order?.amountCents, 1200, 'the order is the document Order/o-1');
        assert.equal(order?.lock_seq, 1, 'with the lock fields of its first step');
        assert.equal(typeof order?.lock_chain, 'string');
      } finally {
        await firestore.terminate();
        await native.stop();
      }
    },
  },
  {
    // Builds the Locker and mounts the three routes of the invoice example; the fan-out itself is run
    // by test/fanout/fanout-suite.ts on every store, and by the example app's order flow.
    page: 'docs/guides/fan-out.md', index: 0, shows: "await ctx.fanOut(ctx.payload.lines.map(",
    async check({ start }) {
      await loads(await start());
    },
  },
  {
    page: 'docs/guides/getting-started.md', index: 0, shows: "app.post('/charge'",
    async check({ start }) {
      const run = await start();
      await loads(run);
      // A task request the local queue did not sign is refused before the store is touched.
      assert.equal(await serving(run, '/charge'), 404, 'the step routes take POSTs only');
      const unsigned = await fetch(`http://127.0.0.1:${run.port}/charge`, { method: 'POST' });
      assert.equal(unsigned.status, 401);
    },
  },
  {
    page: 'docs/guides/getting-started.md', index: 1, shows: 'taskBodyRecovery()',
    async check({ start }) {
      await loads(await start());
    },
  },
  {
    page: 'docs/guides/testing.md', index: 0, shows: 'a duplicate: dropped',
    async check({ start }) {
      const run = await start();
      await loads(run);
      assert.equal(await run.exited, 0, run.stderr());
      assert.match(run.stdout(), /^ok$/m);
    },
  },
  {
    page: 'docs/guides/testing.md', index: 1, shows: 'takes the lease over and runs the step again',
    async check({ start }) {
      const run = await start();
      await loads(run);
      assert.equal(await run.exited, 0, run.stderr());
      assert.match(run.stdout(), /^ok$/m);
    },
  },
  {
    page: 'docs/guides/operating.md', index: 5, shows: 'locker.startSweeping(5_000)',
    async check({ start }) {
      await loads(await start());
    },
  },
  {
    page: 'docs/reference/events.md', index: 0, shows: "locker.on('dropped'",
    async check({ start }) {
      await loads(await start());
    },
  },
];

/** Every `ts` block of the docs that builds a Locker. */
function lockerBlocks(): DocBlock[] {
  return docPages().flatMap((page) => docBlocks(page, 'ts')).filter((b) => b.code.includes('new Locker('));
}

// The rows run four at a time: each with a Cloud Tasks server and a Datastore project of its own,
// so no row sees another's tasks, planned failures or entities.
describe('every documented example that builds a Locker runs', { concurrency: 4, skip: process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)' }, () => {
  const blocks = lockerBlocks();
  const children: Run[] = [];

  before(() => {
    mkdirSync(DIR, { recursive: true });
  });
  after(() => {
    for (const run of children) run.kill('SIGKILL');
    rmSync(DIR, { recursive: true, force: true });
  });

  it('has a row for every block that builds a Locker, and each row is such a block', () => {
    const rows = new Set(EXAMPLES.map((e) => `${e.page}#${e.index}`));
    assert.deepEqual(blocks.map((b) => `${b.page}#${b.index}`).filter((id) => !rows.has(id)), [], 'blocks without a row');
    for (const e of EXAMPLES) {
      const block = blocks.find((b) => b.page === e.page && b.index === e.index);
      assert.ok(block?.code.includes(e.shows), `${e.page} block ${e.index} builds a Locker and shows ${e.shows}`);
    }
  });

  /** Writes the block as a file and returns a starter for it, with its own Cloud Tasks server and Datastore project. */
  function rig(block: DocBlock, tasks: CloudTasksServer, project: string): Rig {
    const file = join(DIR, `${block.page.replace(/[/.]/g, '_')}-${block.index}.ts`);
    const to = (target: string): string => relative(DIR, join(ROOT, target)).replace(/\\/g, '/');
    writeFileSync(file, `${block.code
      .replace(/from 'datastore-locker'/g, `from '${to('src/index')}'`)
      .replace(/from 'datastore-locker\/firestore'/g, `from '${to('src/firestore')}'`)
      .replace(/from '@google-cloud\/tasks'/g, `from '${to('test/support/docs-tasks-client')}'`)}\nexport {};\n`);
    return {
      tasks,
      async start(env = {}, probe) {
        const port = await freePort();
        const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PORT|GOOGLE_CLOUD_PROJECT|SMTP_URL|K_SERVICE|GAE_SERVICE)$/.test(name)));
        const child = spawn(process.execPath, ['--import', 'tsx', RUNNER], {
          cwd: ROOT,
          env: {
            ...clean, METADATA_SERVER_DETECTION: 'none', DOCS_BLOCK: file, PORT: String(port), CLOUD_TASKS_TEST_PORT: String(tasks.port), DATASTORE_PROJECT_ID: project,
            ...(probe === undefined ? {} : { DOCS_PROBE: JSON.stringify(probe) }), ...env,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const out: string[] = [];
        const err: string[] = [];
        let listeners: Array<() => void> = [];
        const changed = (): void => listeners.forEach((l) => l());
        child.stdout.setEncoding('utf8').on('data', (c: string) => { out.push(c); changed(); });
        child.stderr.setEncoding('utf8').on('data', (c: string) => err.push(c));
        const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
        // Gone once its output is all read: 'exit' can come before the last of stdout (a block that
        // reports DOCS-RUN and exits at once), 'close' comes after it.
        let gone = false;
        child.once('close', () => { gone = true; changed(); });
        const line = <T>(tag: string): Promise<T> => new Promise<T>((resolve, reject) => {
          const look = (): void => {
            const found = tagged<T>(out.join(''), tag);
            if (found !== undefined) { listeners = listeners.filter((l) => l !== look); resolve(found); }
            else if (gone) reject(new Error(`the example exited (${String(child.exitCode)}) without ${tag}\n${err.join('')}`));
          };
          listeners.push(look);
          look();
        });
        const run: Run = {
          port,
          loaded: line('DOCS-RUN'),
          probed: line('DOCS-PROBE'),
          exited,
          stdout: () => out.join(''),
          stderr: () => err.join(''),
          kill: (signal) => { if (child.exitCode === null && child.signalCode === null) child.kill(signal); },
        };
        run.probed.catch(() => {});
        children.push(run);
        return run;
      },
    };
  }

  for (const example of EXAMPLES) {
    const name = `${example.page}, block ${example.index}${example.runBy ? ` (run by ${example.runBy})` : ''}`;
    it(name, async () => {
      const block = blocks.find((b) => b.page === example.page && b.index === example.index);
      assert.ok(block, `${example.page} has a ts block ${example.index} that builds a Locker`);
      if (example.runBy !== undefined) {
        assert.ok(readFileSync(join(ROOT, example.runBy), 'utf8').length > 0, `${example.runBy} exists`);
        return;
      }
      assert.ok(example.check, 'a row runs its block or names the test that does');
      const tasks = await startCloudTasksServer();
      const own: Run[] = [];
      const mine = rig(block, tasks, `${process.env.DATASTORE_PROJECT_ID ?? 'locker-test'}-${example.page.replace(/[^a-z0-9]+/gi, '-')}-${example.index}`.toLowerCase());
      try {
        await example.check({ tasks, start: async (env, probe) => { const run = await mine.start(env, probe); own.push(run); return run; } });
      } finally {
        for (const run of own) run.kill('SIGKILL'); // what the row left running
        await tasks.close();
      }
    });
  }
});

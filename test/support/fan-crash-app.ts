/**
 * A child-process app for the fan-out kill tests (`test/fanout/fanout.kill.test.ts`): a Locker on one of the
 * Datastore emulators with the local dispatcher and the sweep on a timer. `/parent` fans out
 * `CHILDREN` children to `/child` and joins at `/join`; every child run and every join run is
 * recorded in the emulator. The store is wrapped by the seam store (`seam-store.ts`, in the test
 * app, never in the library), which SIGKILLs this process at one point of starting the children,
 * chosen by `CRASH_AT`:
 *
 * - `before-header`: the header's `writing` transaction, before its commit (nothing written);
 * - `mid-pages`: the second page's record, before its commit (the first page's children started);
 * - `before-seal`: the seal, before its commit (every child started, not sealed);
 * - `after-seal`: once the seal committed (the step finished in the store, not answered, and the
 *   seal's completion check not run).
 *
 * With `DROP_CHILDREN=1` the first process creates no child task (its children run only after the
 * restart, re-delivered by the sweep), so no child's handler is cut off by the kill. `START=1`
 * kicks the parent off; `NAMESPACE`, `PARENT`, `EMULATOR` (`legacy` or `firestore`).
 * It prints `fan-crash-app listening` once it serves, and for the kill test's failure message, every
 * 5 s what has waited over 10 s (store calls, through `inflight-store.ts`; requests being served; a
 * sweep), else every 30 s its queue's counts and how many sweeps ran: a process whose sweeps run
 * and find nothing due is told apart from one whose sweep never settles.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore, type Key } from '@google-cloud/datastore';
import { DatastoreStore, LocalQueue, Locker, StoreUnavailableError, withContentionRetry, type Properties, type Queue, type TaskRequest } from '../../src/index';
import { SeamStore } from './seam-store';
import { inflightStore } from './inflight-store';

const env = process.env;
const crashAt = env.CRASH_AT ?? '';
const namespace = env.NAMESPACE!;
const count = Number(env.CHILDREN ?? '150');
const host = env.EMULATOR === 'firestore' ? env.LOCKER_FIRESTORE_EMULATOR_HOST : env.DATASTORE_EMULATOR_HOST;
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: host });

/** Dies at once, as a power cut would: no `finally`, no shutdown. */
function die(point: string): Promise<void> {
  console.log(`fan-crash-app killed at ${point}`);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<void>(() => undefined);
}

const inflight = inflightStore(new DatastoreStore(datastore, { namespaces: [namespace] }));
const store = new SeamStore(inflight.store);
if (crashAt === 'before-header') store.hold('LockerFanOut:writing', () => die(crashAt));
if (crashAt === 'before-seal') store.hold('LockerFanOut:sealed', () => die(crashAt));
if (crashAt === 'after-seal') store.hold('LockerFanOut:sealed', () => die(crashAt), { after: true });
if (crashAt === 'mid-pages') {
  let pages = 0;
  const second = (): void => store.hold('LockerFanOutPage', async () => {
    if (++pages === 2) return die(crashAt);
    second();
  });
  second();
}

let baseUrl = '';
const local = new LocalQueue({ baseUrl: () => baseUrl, logger: console, minBackoffMs: 20, maxBackoffMs: 500 });
const queue: Queue = {
  authenticator: () => local.authenticator(),
  async enqueue(task: TaskRequest) {
    if (env.DROP_CHILDREN === '1' && task.path === '/child') return; // lost with the process
    return local.enqueue(task);
  },
};
const locker = new Locker({ store, queue, maxRetries: 5, leaseDuration: Number(env.LEASE_MS ?? '1000'), stallAfter: Number(env.STALL_MS ?? '1500') });

/** Adds one to `field` of the record `name` (kind `FanCrash`), in the emulator. */
async function bump(name: string, extra: Properties = {}): Promise<void> {
  const key = datastore.key({ namespace, path: ['FanCrash', name] });
  await withContentionRetry(() => store.transaction(async (tx) => {
    const props: Properties = (await tx.get(key)) ?? { runs: 0 };
    tx.put(key, { ...props, ...extra, runs: Number(props.runs ?? 0) + 1 }, []);
  }), { attempts: 20, baseDelayMs: 10, maxDelayMs: 200 });
}

const parentKey = (): Key => datastore.key({ namespace, path: ['FanCrashOrder', env.PARENT ?? 'order'] });
const lineKey = (i: number): Key => datastore.key({ namespace, path: ['FanCrashLine', `line-${i}`] });

const app = express();
/** Requests being served, for the report of what is stuck (`report()`). */
const serving = new Set<{ what: string; since: number }>();
app.use((req, res, next) => {
  const request = { what: `${req.path} ${String(req.headers['x-cloudtasks-taskname'])}`, since: Date.now() };
  serving.add(request);
  res.once('close', () => serving.delete(request));
  next();
});
app.post('/parent', locker.handle(async (ctx) => {
  await ctx.fanOut(Array.from({ length: count }, (_, i) => ({ key: lineKey(i), path: '/child', payload: { i } })), { join: '/join' });
}, (props) => props));
// Each run is counted twice: every attempt that ran the handler (`FanCrash` records, not fenced: an
// attempt whose lease was taken over may run again), and the finished run on the entity itself
// (written with the step's fenced finish: exactly once).
app.post('/child', locker.handle<Properties, { i: number }>(async (ctx) => {
  await bump(`child-${ctx.payload.i}`);
  await ctx.setResult({ i: ctx.payload.i });
  ctx.entity.runs = Number(ctx.entity.runs ?? 0) + 1;
}, (props) => props));
app.post('/join', locker.handle<Properties>(async (ctx) => {
  const fanIn = await ctx.fanIn();
  if (!fanIn) throw new Error('no fan-in');
  const seen: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await fanIn.children(cursor === undefined ? {} : { cursor });
    for (const c of page.children) if (c.state === 'succeeded') seen.push((c.result as { i: number }).i);
    cursor = page.cursor;
  } while (cursor !== undefined);
  // Whether every child's chain had ended when the join ran, read from the child entities.
  const locks = await Promise.all(Array.from({ length: count }, (_, i) => store.get(lineKey(i))));
  const notEnded = locks.map((p, i) => `${i}:${String(p?.lock_state)}:${String(p?.lock_seq)}`).filter((_, i) => locks[i]?.lock_state !== 'complete');
  await bump('join');
  Object.assign(ctx.entity, {
    joinRuns: Number(ctx.entity.joinRuns ?? 0) + 1, outcome: fanIn.outcome, total: fanIn.counts.total, pending: fanIn.counts.pending,
    seen: new Set(seen).size, notEnded: notEnded.join(' '),
  });
}, (props) => props));

const sweeps = { started: 0, done: 0, running: new Set<{ what: string; since: number }>() };
let lastAlive = 0;

/**
 * Every 5 s: what has waited more than 10 s (store calls, requests being served, the sweep), and
 * every 30 s a line saying the process is alive, with the queue's counts and the sweeps run.
 */
function report(): void {
  const now = Date.now();
  const old = (items: Iterable<{ what: string; since: number }>): string[] => {
    const waiting = [...items].filter((i) => now - i.since > 10_000).map((i) => `${i.what} ${Math.round((now - i.since) / 1000)}s`);
    return waiting.length > 20 ? [...waiting.slice(0, 20), `and ${waiting.length - 20} more`] : waiting;
  };
  const stuck = { store: old(inflight.pending), serving: old(serving), sweep: old(sweeps.running) };
  const counts = { queue: local.stats(), sweeps: { started: sweeps.started, done: sweeps.done }, storeCalls: inflight.pending.size, serving: serving.size };
  if (stuck.store.length + stuck.serving.length + stuck.sweep.length > 0) {
    console.log(`fan-crash-app waiting over 10 s: ${JSON.stringify({ ...counts, ...stuck })}`);
  } else if (now - lastAlive >= 30_000) {
    lastAlive = now;
    console.log(`fan-crash-app alive: ${JSON.stringify(counts)}`);
  }
}

async function main(): Promise<void> {
  await store.init();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Counted through `locker.sweep`, which the sweeping timer calls.
  const sweep = locker.sweep.bind(locker);
  locker.sweep = (limit?: number) => {
    const run = { what: 'sweep', since: Date.now() };
    sweeps.started++;
    sweeps.running.add(run);
    return sweep(limit).finally(() => { sweeps.running.delete(run); sweeps.done++; });
  };
  setInterval(report, 5_000).unref();
  locker.startSweeping(Number(env.SWEEP_MS ?? '200'));
  console.log('fan-crash-app listening');
  if (env.START === '1') await startParent();
}

/**
 * The test's set-up, not what it tests: schedules the parent, and again when it failed
 * after contention (the legacy emulator answered the first transaction of a fresh namespace with
 * contention five times in a row once, while other killed apps' transactions were dead). Refused
 * transactions wrote nothing, so the next attempt starts the chain once.
 */
async function startParent(): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await locker.schedule(parentKey(), { order: true }, '/parent');
      return;
    } catch (error) {
      // Only contention: its transactions were refused, so nothing was written (a deadline might have committed).
      if (!(error instanceof StoreUnavailableError) || !/contention/.test(error.message) || attempt >= 4) throw error;
      console.log(`fan-crash-app: scheduling the parent failed (${error.message}); again in 1 s`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

main().catch((error: unknown) => {
  console.error(`fan-crash-app failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});

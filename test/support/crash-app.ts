/**
 * A child-process app for the kill-point tests: a Locker on the Datastore emulator with the local
 * dispatcher and `startSweeping()`, whose chains record their side effects and alerts in the
 * emulator. The store and queue are wrapped by fault injectors (here, in the test app, never in
 * the library) that SIGKILL this process at one named point of one chain's step, chosen by
 * environment variables:
 *
 * - `CRASH_AT`: `kickoff-commit` (a kickoff committed, its task not yet created),
 *   `handler-running` (inside the handler, before its side effect), `after-side-effect` (the side
 *   effect recorded, the finishing write not yet made), `after-release` (the handler threw and
 *   its lease was released, the retry not yet delivered), `in-schedule` (inside `ctx.schedule()`:
 *   the next step committed, its task not yet created); unset: no crash.
 * - `CRASH_CHAIN`, `CRASH_STEP`: the chain (entity name) and step the kill point applies to.
 * - `CHAINS`: entity names of the chains to kick off at start (`CRASH_CHAIN` last); empty on a restart.
 * - `NAMESPACE`, `STEPS`, `LEASE_MS`, `STALL_MS`, `SWEEP_MS`.
 *
 * It prints `crash-app listening on URL` once it serves, and `crash-app started CHAIN` per kickoff.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore, type Key } from '@google-cloud/datastore';
import type { KillPoint } from './kill-points';
import { DatastoreStore, LocalQueue, Locker, withContentionRetry, type AlertEvent, type LedgerRecord, type Properties, type Queue, type Store, type StoreTransaction, type TaskRequest } from '../../src/index';


const env = process.env;
const crashAt = env.CRASH_AT as KillPoint | undefined;
const crashChain = env.CRASH_CHAIN ?? '';
const crashStep = Number(env.CRASH_STEP ?? '0');
const namespace = env.NAMESPACE!;
const steps = Number(env.STEPS ?? '4');
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: env.DATASTORE_EMULATOR_HOST });

/** Dies at once, as a power cut would: no `finally`, no shutdown. */
function die(point: string): never {
  console.log(`crash-app killed at ${point}`);
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

const targets = (key: Key): boolean => key.name === crashChain;

/** The store, killing the process at the store-side kill points. */
function faultyStore(inner: Store): Store {
  const wrapTx = (tx: StoreTransaction, puts: LedgerRecord[]): StoreTransaction => ({
    get: (key) => tx.get(key),
    put: (key, props, excludes) => tx.put(key, props, excludes),
    delete: (key) => tx.delete(key),
    getLedger: (key, id) => tx.getLedger(key, id),
    deleteLedger: (key, id) => tx.deleteLedger(key, id),
    putLedger(record) {
      if (crashAt === 'after-side-effect' && targets(record.key) && record.seq === crashStep + 1) die(crashAt);
      puts.push(record);
      tx.putLedger(record);
    },
  });
  return {
    get projectId() { return inner.projectId; },
    init: () => inner.init?.() ?? Promise.resolve(),
    get: (key) => inner.get(key),
    read: (key) => inner.read(key),
    listDue: (now, limit) => inner.listDue(now, limit),
    async transaction(fn) {
      const puts: LedgerRecord[] = [];
      const result = await inner.transaction((tx) => fn(wrapTx(tx, puts)));
      if (crashAt === 'in-schedule' && puts.some((r) => targets(r.key) && r.seq === crashStep + 1)) die(crashAt);
      return result;
    },
    async replaceIfUnchanged(key, snapshot, props, excludes) {
      const finishing = props.lock_state === 'complete' && props.lock_seq === crashStep + 1;
      if (crashAt === 'after-side-effect' && targets(key) && finishing) die(crashAt);
      const written = await inner.replaceIfUnchanged(key, snapshot, props, excludes);
      const released = props.lock_req === '' && props.lock_state === 'scheduled' && props.lock_seq === crashStep && Number(props.lock_try) >= 1;
      if (written && crashAt === 'after-release' && targets(key) && released) die(crashAt);
      return written;
    },
  };
}

/** The queue, killing the process before a kickoff's task is created. */
function faultyQueue(inner: LocalQueue): Queue {
  return {
    authenticator: () => inner.authenticator(),
    async enqueue(task: TaskRequest) {
      const kickoff = task.headers['x-lock-seq'] === '1' && task.headers['x-lock-send'] === undefined;
      if (crashAt === 'kickoff-commit' && kickoff && task.headers['x-lock-key'] === locker.encodeKey(chainKey(crashChain))) die(crashAt);
      return inner.enqueue(task);
    },
  };
}

function chainKey(name: string): Key {
  return datastore.key({ namespace, path: ['CrashChain', name] });
}

/** Counts one run (or attempt) of a step's side effect in the emulator; returns the new count. */
async function count(key: Key, seq: number, field: 'runs' | 'attempts'): Promise<number> {
  const effect = datastore.key({ namespace, path: [...key.path, 'SideEffect', `step-${seq}`] });
  return withContentionRetry(() => store.transaction(async (tx) => {
    const props: Properties = (await tx.get(effect)) ?? { runs: 0, attempts: 0 };
    const next = { ...props, [field]: Number(props[field] ?? 0) + 1 };
    tx.put(effect, next, []);
    return next[field] as number;
  }), { attempts: 20, baseDelayMs: 10, maxDelayMs: 200 });
}

/** Records an alert under its id: alerts are at least once with a stable id, so a repeat (an alert the sweep sent again) is one record. */
async function recordAlert(event: AlertEvent): Promise<void> {
  const alert = datastore.key({ namespace, path: ['CrashAlert', event.id] });
  await store.transaction(async (tx) => tx.put(alert, { reason: event.reason, chain: event.key.name ?? '', seq: event.seq }, []));
}

const store = faultyStore(new DatastoreStore(datastore, { namespaces: [namespace] }));
let baseUrl = '';
const local = new LocalQueue({ baseUrl: () => baseUrl, logger: console, minBackoffMs: 20, maxBackoffMs: 500 });
const locker = new Locker({
  store, queue: faultyQueue(local), alerter: recordAlert, maxRetries: 5,
  leaseDuration: Number(env.LEASE_MS ?? '1000'), stallAfter: Number(env.STALL_MS ?? '1500'),
});

const app = express();
app.post('/step', locker.handle(async (ctx) => {
  const target = targets(ctx.key) && ctx.seq === crashStep;
  if (crashAt === 'handler-running' && target) die(crashAt);
  const attempts = await count(ctx.key, ctx.seq, 'attempts');
  if (target && attempts === 1 && crashAt === 'after-release') throw new Error('the first attempt of this step fails');
  await count(ctx.key, ctx.seq, 'runs');
  if (ctx.seq < steps) await ctx.schedule('/step');
}, (props) => props));

async function main(): Promise<void> {
  await store.init?.();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  locker.startSweeping(Number(env.SWEEP_MS ?? '200'));
  console.log(`crash-app listening on ${baseUrl}`);
  for (const name of (env.CHAINS ?? '').split(',').filter((n) => n !== '')) {
    await locker.schedule(chainKey(name), { name }, '/step');
    console.log(`crash-app started ${name}`);
  }
}

main().catch((error: unknown) => {
  console.error(`crash-app failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});

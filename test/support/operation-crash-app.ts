/**
 * A child-process app for the bulk operation kill test: a Locker on the legacy Datastore emulator
 * with the local dispatcher, a one-step `/work` route and the status router at `/ops` (whose task
 * route runs the operation's pages). Every handler run prints `run <name>`, every retry
 * `retried <name>`, every alert `alert <reason> <name>` (stdout to a pipe is written at once on
 * Linux, so a SIGKILL loses no line already printed).
 *
 * `PHASE=seed`: starts `ITEMS` chains that fail for good, waits until every one failed, then starts
 * the bulk retry `OP_ID`, and SIGKILLs itself just before the `KILL_AFTER`-th task of a retried
 * chain is created (a seam in the queue: the code under test is not touched), in the middle of a
 * page. `PHASE=resume`: serves and sweeps until killed. In both, once the operation started, the
 * chains whose number is a multiple of 5 fail for good again when retried (the rest complete).
 *
 * Env: `NAMESPACE`, `ITEMS`, `OP_ID`, `PHASE`, `KILL_AFTER`, `LEASE_MS`, `STALL_MS`, `SWEEP_MS`.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore, type Key } from '@google-cloud/datastore';
import { DatastoreStore, LocalQueue, Locker, PermanentError, type Queue, type TaskRequest } from '../../src/index';

const env = process.env;
const namespace = env.NAMESPACE!;
const items = Number(env.ITEMS ?? '250');
const killAfter = Number(env.KILL_AFTER ?? '0');
const seeding = env.PHASE === 'seed';
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: env.DATASTORE_EMULATOR_HOST });
export const KIND = 'CrashOrder';

const store = new DatastoreStore(datastore, { namespaces: [namespace] });
let baseUrl = '';
const local = new LocalQueue({ baseUrl: () => baseUrl, logger: quiet(), minBackoffMs: 20, maxBackoffMs: 500 });
/** Whether the bulk retry started: from then on, retried chains' tasks are counted toward the kill. */
let operating = !seeding;
let sent = 0;
const queue: Queue = {
  authenticator: () => local.authenticator(),
  async enqueue(task: TaskRequest) {
    if (seeding && operating && task.path === '/work' && ++sent === killAfter) {
      console.log(`operation-crash-app killed before task #${killAfter}`);
      process.kill(process.pid, 'SIGKILL');
    }
    return local.enqueue(task);
  },
};
const locker = new Locker({
  store, queue, logger: quiet(), maxRetries: 3, alerter: (e) => { console.log(`alert ${e.reason} ${e.key.name ?? ''}`); },
  leaseDuration: Number(env.LEASE_MS ?? '3000'), stallAfter: Number(env.STALL_MS ?? '3000'),
});
locker.on('retried', (e) => console.log(`retried ${e.key.name ?? ''}`));

const app = express();
app.post('/work', locker.handle((ctx) => {
  const name = ctx.key.name ?? '';
  console.log(`run ${name}`);
  const i = Number(name.split('-').at(-1));
  if (!operating || i % 5 === 0) throw new PermanentError('declined');
}, (props) => props));
app.use('/ops', locker.statusRouter({ authenticate: () => ({ ok: true, principal: 'kill-test' }), kinds: [KIND], namespaces: [namespace] }));

/** The order keys of the run (the test makes the same ones). */
export function orderKey(i: number): Key {
  return datastore.key({ namespace, path: [KIND, `order-${i}`] });
}

function quiet(): { info(m: string, f?: Record<string, unknown>): void; warn(): void; error(m: string, f?: unknown): void } {
  return {
    info: (m, f) => { if (m.startsWith('bulk operation')) console.log(`audit ${m} ${JSON.stringify(f)}`); },
    warn: () => undefined,
    error: (m, f) => console.error(m, JSON.stringify(f)),
  };
}

async function failedCount(): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await locker.inspect().list({ state: 'failed', kind: KIND, namespace, limit: 200, ...(cursor ? { cursor } : {}) });
    n += page.steps.length;
    cursor = page.cursor;
  } while (cursor);
  return n;
}

async function main(): Promise<void> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  console.log(`operation-crash-app listening on ${baseUrl}`);
  locker.startSweeping(Number(env.SWEEP_MS ?? '300'));
  if (!seeding) return;
  const result = await locker.scheduleMany(Array.from({ length: items }, (_, i) => ({ key: orderKey(i), entity: { i }, path: '/work' })));
  if (result.started !== items) throw new Error(`started ${result.started} of ${items}`);
  while ((await failedCount()) < items) await new Promise((resolve) => setTimeout(resolve, 200));
  console.log('operation-crash-app seeded');
  operating = true;
  await locker.bulk('retry', { kind: KIND, namespace }, { mount: '/ops', id: env.OP_ID!, by: 'kill-test' });
}

main().catch((error: unknown) => {
  console.error(`operation-crash-app failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});

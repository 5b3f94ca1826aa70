/**
 * A child-process app for the bulk kill test: a Locker on the legacy Datastore emulator with the
 * local dispatcher, whose one-step `/invoice` chains count their runs on the entity itself. At
 * start it calls `locker.scheduleMany()` on `ITEMS` invoices with `KICKOFF_ID`, prints
 * `bulk-crash-app result {json}`, then sweeps on a timer and serves until killed.
 *
 * Faults are injected at the seams, here in the test app, never in the library: the store's
 * generated client (a recorded client, `datastore-spy.ts`) and the queue SIGKILL the process just
 * before the `KILL_AFTER`-th RPC or task of kind `KILL_AT`:
 *
 * - `lookup`: during the lookups (some batches read and written, others not yet);
 * - `commit`: between commits (a batch's ledger records committed and its entities not, or some
 *   batches' entities committed and others not);
 * - `enqueue`: during task creation (chains committed, some tasks created, others not);
 * - unset: no kill.
 *
 * Env: `NAMESPACE`, `ITEMS`, `KICKOFF_ID`, `KILL_AT`, `KILL_AFTER`, `STALL_MS`, `LEASE_MS`, `SWEEP_MS`.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore, type Key } from '@google-cloud/datastore';
import { DatastoreStore, LocalQueue, Locker } from '../../src/index';
import { killSwitch } from './kill-switch';

const env = process.env;
const namespace = env.NAMESPACE!;
const items = Number(env.ITEMS ?? '5000');
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: env.DATASTORE_EMULATOR_HOST });

const kill = killSwitch('bulk-crash-app', datastore, env, true);
// The backend is known (the legacy emulator): no check runs, so the RPCs counted are the call's.
const store = new DatastoreStore(datastore, { client: kill.client, namespaces: [namespace], conditionalWrites: true, beginWithFirstRead: true });
let baseUrl = '';
const local = new LocalQueue({ baseUrl: () => baseUrl, logger: quiet(), minBackoffMs: 20, maxBackoffMs: 500 });
const queue = kill.queue(local);
const locker = new Locker({
  store, queue, logger: quiet(), maxRetries: 5,
  leaseDuration: Number(env.LEASE_MS ?? '3000'), stallAfter: Number(env.STALL_MS ?? '3000'),
});

const app = express();
app.post('/invoice', locker.handle<{ runs: number }>((ctx) => {
  ctx.entity.runs += 1;
}, (props) => ({ ...props, runs: typeof props.runs === 'number' ? props.runs : 0 })));

/** The invoice keys of the run (the test makes the same ones). */
function invoiceKey(i: number): Key {
  return datastore.key({ namespace, path: ['BulkInvoice', `invoice-${i}`] });
}

function quiet(): { info(): void; warn(): void; error(m: string, f?: unknown): void } {
  return { info: () => undefined, warn: () => undefined, error: (m, f) => console.error(m, JSON.stringify(f)) };
}

async function main(): Promise<void> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  console.log(`bulk-crash-app listening on ${baseUrl}`);
  const list = Array.from({ length: items }, (_, i) => ({ key: invoiceKey(i), entity: { customer: `c-${i}`, runs: 0 }, path: '/invoice', payload: { i } }));
  const result = await locker.scheduleMany(list, { kickoffId: env.KICKOFF_ID! });
  kill.armed = false;
  const resumed = result.results.filter((r) => r.status === 'started' && r.resumed).length;
  const failures = result.results.flatMap((r) => (r.status === 'failed' ? [r.error.message] : [])).slice(0, 3);
  console.log(`bulk-crash-app result ${JSON.stringify({ started: result.started, busy: result.busy, failed: result.failed, resumed, failures })}`);
  locker.startSweeping(Number(env.SWEEP_MS ?? '300'));
}

main().catch((error: unknown) => {
  console.error(`bulk-crash-app failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});

/**
 * A child-process app for the tick kill test: a Locker on the legacy Datastore emulator (or, with
 * `EMULATOR=firestore`, the Firestore emulator in Datastore mode) with the
 * local dispatcher, declaring `SCHEDULES` hourly schedules whose runs (a key per tick) count
 * themselves on their entity. Its clock starts at `START` (epoch ms) and runs on from there. At
 * start it ticks once before the first tick time (the declarations are written), then at `TICK`
 * (epoch ms; the clock jumps there), prints `tick-crash-app result {json}`, and serves the runs
 * until killed.
 *
 * The fault is injected at the seams, never in the library: the store's generated client (a
 * recorded client, `datastore-spy.ts`) and the queue SIGKILL the process just before the
 * `KILL_AFTER`-th lookup, commit or task (`KILL_AT`) of the second tick; unset: no kill.
 *
 * Env: `NAMESPACE`, `SCHEDULES`, `START`, `TICK`, `KILL_AT`, `KILL_AFTER`, `EMULATOR`.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { DatastoreStore, LocalQueue, Locker } from '../../src/index';
import { killSwitch } from './kill-switch';

const env = process.env;
const namespace = env.NAMESPACE!;
const schedules = Number(env.SCHEDULES ?? '300');
const firestore = env.EMULATOR === 'firestore';
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: firestore ? env.LOCKER_FIRESTORE_EMULATOR_HOST : env.DATASTORE_EMULATOR_HOST });

const kill = killSwitch('tick-crash-app', datastore, env, false);
// The backend is known (no check runs, so the RPCs counted are the tick's): the legacy emulator
// refuses a stale baseVersion and begins a transaction with its first read; the Firestore emulator
// in Datastore mode does neither.
const store = new DatastoreStore(datastore, { client: kill.client, namespaces: [namespace], conditionalWrites: !firestore, beginWithFirstRead: !firestore });
let baseUrl = '';
const local = new LocalQueue({ baseUrl: () => baseUrl, logger: quiet(), minBackoffMs: 20, maxBackoffMs: 500 });
const queue = kill.queue(local);
const began = Date.now();
let origin = Number(env.START);
const locker = new Locker({ store, queue, logger: quiet(), clock: () => origin + (Date.now() - began), scheduleNamespace: namespace, leaseDuration: 3_000, stallAfter: 3_000 });
for (let i = 0; i < schedules; i++) {
  locker.recurring(`report-${i}`, {
    cron: '0 * * * *', path: '/report', overlap: 'allow',
    key: (tick) => datastore.key({ namespace, path: ['Report', `report-${i}@${tick.at.toISOString()}`] }),
    entity: (tick) => ({ schedule: `report-${i}`, at: tick.at, runs: 0 }),
  });
}

const app = express();
app.post('/report', locker.handle<{ runs: number }>((ctx) => {
  ctx.entity.runs += 1;
}, (props) => ({ ...props, runs: typeof props.runs === 'number' ? props.runs : 0 })));

function quiet(): { info(): void; warn(): void; error(m: string, f?: unknown): void } {
  return { info: () => undefined, warn: () => undefined, error: (m, f) => console.error(m, JSON.stringify(f)) };
}

async function main(): Promise<void> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A tick that fails (the Firestore emulator keeps a killed process's transactions' locks until
  // they time out: contention) is logged, as the sweep route logs it; the sweeps tick again, as
  // the next heartbeat would.
  const tickOnce = (): Promise<unknown> => locker.tick().catch((error: unknown) => console.error(`tick-crash-app tick failed: ${String(error)}`));
  await tickOnce();
  origin = Number(env.TICK) - (Date.now() - began);
  kill.armed = true;
  const result = await tickOnce();
  kill.armed = false;
  console.log(`tick-crash-app result ${JSON.stringify(result)}`);
  locker.startSweeping(300);
}

main().catch((error: unknown) => {
  console.error(`tick-crash-app failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});

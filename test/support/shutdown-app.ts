/**
 * A child-process app for the SIGTERM test: a Locker on the Datastore emulator with one `handle()`
 * route, wired as a Cloud Run service should be: SIGTERM → `locker.shutdown()` → the HTTP server
 * closes. Environment: `NAMESPACE`, `SHUTDOWN_MS` (shutdown's timeoutMs), `HANDLER`:
 * `cooperative` (the handler stops on `ctx.signal`) or `stubborn` (it never stops, and keeps the
 * process alive with a timer, so only SIGKILL ends it).
 *
 * It prints `shutdown-app listening on URL`, `shutdown-app handler started ATTEMPT` when a handler
 * starts, `shutdown-app stopping` on SIGTERM and `shutdown-app closed` once the server closed.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { DatastoreStore, Locker, type Properties } from '../../src/index';
import { testAuth } from './task-app';

const env = process.env;
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: env.DATASTORE_EMULATOR_HOST });
const store = new DatastoreStore(datastore, { namespaces: [env.NAMESPACE!] });
const locker = new Locker({ store, authenticate: testAuth, leaseDuration: 60_000 });
const stubborn = env.HANDLER === 'stubborn';

const app = express();
app.post('/task', locker.handle(async (ctx) => {
  console.log(`shutdown-app handler started ${ctx.attempt}`);
  if (stubborn) {
    await new Promise(() => { setInterval(() => undefined, 1_000); }); // deaf to the signal, forever
  }
  await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
}, (props: Properties) => props));

const server = app.listen(0, '127.0.0.1', () => {
  console.log(`shutdown-app listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

process.once('SIGTERM', () => {
  console.log('shutdown-app stopping');
  void locker.shutdown({ timeoutMs: Number(env.SHUTDOWN_MS ?? '8000') }).then(() => {
    server.close(() => console.log('shutdown-app closed'));
    server.closeIdleConnections();
  });
});

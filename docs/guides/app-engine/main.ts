/**
 * An App Engine app on datastore-locker: an order whose two steps (charge, then receipt) each run
 * once, chained through Cloud Tasks App Engine-target tasks, with the sweep route App Engine cron
 * calls, and a clean stop on SIGTERM. Copy it with app.yaml, cron.yaml, package.json and
 * tsconfig.json from the same folder; rename the kind and the steps, keep the rest.
 *
 * Environment (app.yaml's env_variables; App Engine sets the rest):
 *   TASKS_LOCATION          the queue's region, the app's region, e.g. europe-west1
 *   TASKS_QUEUE             the queue's id, e.g. steps
 *   GOOGLE_CLOUD_PROJECT    set by App Engine
 *   GAE_APPLICATION, GAE_SERVICE  set by App Engine: the authenticators refuse to start without them
 *   PORT                    set by App Engine (8080 when unset)
 *   CLOUD_TASKS_EMULATOR_HOST  optional, for a local run: host:port of a Cloud Tasks emulator (plain gRPC)
 */
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '@google-cloud/tasks';
import { grpc } from 'google-gax';
import {
  appEngineAuthenticator, appEngineCronAuthenticator, CloudTasksQueue, DatastoreStore, Locker, PermanentError, type Properties,
} from 'datastore-locker';

/** An order. The Locker keeps its lock fields (lock_ts, lock_seq, ...) beside these. */
class Order {
  amountCents: number;
  charged: boolean;
  receiptSent: boolean;
  constructor(props: Properties) {
    this.amountCents = typeof props.amountCents === 'number' ? props.amountCents : 0;
    this.charged = props.charged === true;
    this.receiptSent = props.receiptSent === true;
  }
}

/** One JSON line per event: Cloud Logging reads `severity` and `message`. */
function log(severity: 'INFO' | 'ERROR', message: string): void {
  (severity === 'ERROR' ? console.error : console.log)(JSON.stringify({ severity, message }));
}

/** A variable of the environment, or one line naming it and exit code 2. */
function need(name: string): string {
  const value = process.env[name]?.trim();
  if (value) return value;
  log('ERROR', `configuration error: ${name} is not set (app.yaml's env_variables, or App Engine's own)`);
  process.exit(2);
}

const queue = need('TASKS_QUEUE');
const emulator = process.env.CLOUD_TASKS_EMULATOR_HOST?.split(':');
const tasks = emulator === undefined
  ? new CloudTasksClient()
  : new CloudTasksClient({ apiEndpoint: emulator[0], port: Number(emulator[1]), sslCreds: grpc.credentials.createInsecure() });

const locker = new Locker({
  store: new DatastoreStore(new Datastore()),
  queue: new CloudTasksQueue({
    client: tasks,
    project: need('GOOGLE_CLOUD_PROJECT'),
    location: need('TASKS_LOCATION'),
    queue,
    target: { type: 'appengine' }, // this app's default service
  }),
  // Task requests carry X-AppEngine-QueueName, which App Engine strips from requests that come
  // from outside; only tasks of this queue are accepted. It refuses to start off App Engine.
  authenticate: appEngineAuthenticator({ queues: [queue] }),
  // App Engine standard (automatic scaling) lets a task's handler run 10 minutes, whatever the
  // task's dispatch deadline: the Locker stops an attempt half a minute before (ctx.signal).
  requestTimeout: 600_000,
  lockFailedStatus: 409, // a held lease does not slow the queue (see docs/concepts/throttling.md)
});

const app = express();
app.disable('x-powered-by');

// Step 1: charge. Pass ctx.signal to your own I/O, so a shutdown or a timeout stops it.
app.post('/tasks/order/charge', locker.handle<Order>(async (ctx) => {
  if (ctx.entity.amountCents > 1_000_000) throw new PermanentError('the provider refuses the charge'); // failed for good
  ctx.entity.charged = true;
  await ctx.schedule('/tasks/order/receipt'); // the next step, committed with this one
}, (props) => new Order(props), { kinds: ['Order'] }));

// Step 2: the receipt. Returning without scheduling completes the chain.
app.post('/tasks/order/receipt', locker.handle<Order>((ctx) => {
  ctx.entity.receiptSent = true;
}, (props) => new Order(props), { kinds: ['Order'] }));

// App Engine cron (cron.yaml) calls GET /sweep with X-Appengine-Cron: true, which App Engine
// strips from requests that come from outside.
app.get('/sweep', locker.sweepHandler({ authenticate: appEngineCronAuthenticator() }));

const port = Number(process.env.PORT || 8080);
const server = app.listen(port, () => log('INFO', `listening on ${port}`));

// App Engine stops an instance with SIGTERM. The Locker stops first (running steps finish and
// store their outcome; a task arriving meanwhile is answered 503 and retried), then the server.
process.once('SIGTERM', () => {
  void (async () => {
    await locker.shutdown();
    await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeIdleConnections(); });
    await tasks.close();
    log('INFO', 'stopped');
    process.exit(0);
  })();
});

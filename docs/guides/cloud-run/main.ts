/**
 * A Cloud Run service on datastore-locker: an order whose two steps (charge, then receipt) each
 * run once, chained through Cloud Tasks, with the sweep route for Cloud Scheduler, alerts by
 * email, and a clean stop on SIGTERM. Copy it, rename the kind and the steps, keep the rest.
 *
 * Environment (`gcloud run deploy --set-env-vars`; a missing variable stops the service at once
 * with one line naming it):
 *   GOOGLE_CLOUD_PROJECT    the project of the queue (Cloud Run does not set it)
 *   TASKS_LOCATION          the queue's region, e.g. europe-west1
 *   TASKS_QUEUE             the queue's id, e.g. steps
 *   SERVICE_URL             the service's URL: where tasks go, and their OIDC audience
 *   CLOUD_RUN_AUTH          iam when deployed --no-allow-unauthenticated (Cloud Run checks every
 *                           token, then removes its signature), public with --allow-unauthenticated
 *                           (the service verifies signatures itself); see docs/concepts/authentication.md
 *   TASKS_SERVICE_ACCOUNT   the account Cloud Tasks signs its tokens as: the only one the task routes take
 *   SCHEDULER_SERVICE_ACCOUNT  the account Cloud Scheduler signs its tokens as: the only one the sweep takes
 *   SMTP_URL, ALERT_TO, ALERT_FROM   where alerts go (ALERT_TO may list several, comma-separated)
 *   REQUEST_TIMEOUT_SECONDS the service's --timeout, 90 to 1800 (default 300, Cloud Run's default)
 *   DATASTORE_NAMESPACE     optional: the namespace of every entity (default: the default one)
 *   PORT                    set by Cloud Run (8080 when unset)
 *   CLOUD_TASKS_EMULATOR_HOST  optional, for a local run: host:port of a Cloud Tasks emulator (plain gRPC)
 */
import type { Server } from 'node:http';
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '@google-cloud/tasks';
import { grpc } from 'google-gax';
import {
  ChainBusyError, CloudTasksQueue, DatastoreStore, EmailAlerter, Locker, PermanentError,
  cloudRunIamAuthenticator, oidcAuthenticator, type Authenticator, type Properties,
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

/** The payment provider refuses larger charges (a stand-in for its answer): the step fails for good. */
const CHARGE_LIMIT_CENTS = 1_000_000;

/** What the service reads from its environment. */
interface Config {
  port: number;
  project: string;
  location: string;
  queue: string;
  url: string;
  auth: 'iam' | 'public';
  tasksAccount: string;
  schedulerAccount: string;
  tasksEmulator: string | undefined;
  namespace: string | undefined;
  requestTimeoutMs: number;
  smtpUrl: string;
  alertTo: string[];
  alertFrom: string;
}

/** A variable of the environment is missing or wrong (the library's own mistakes are `ConfigError`s). */
class EnvironmentError extends Error {
  override name = 'EnvironmentError';
}

/** Reads the environment; throws `EnvironmentError` naming the first variable that is missing or wrong. */
function readConfig(env: NodeJS.ProcessEnv): Config {
  const need = (name: string, what: string): string => {
    const value = env[name]?.trim();
    if (!value) throw new EnvironmentError(`${name} is not set: set it to ${what}.`);
    return value;
  };
  const seconds = Number(env.REQUEST_TIMEOUT_SECONDS?.trim() || 300);
  if (!Number.isInteger(seconds) || seconds < 90 || seconds > 1800) {
    throw new EnvironmentError('REQUEST_TIMEOUT_SECONDS must be the service\'s --timeout, 90 to 1800 (a task\'s dispatch deadline is at most 30 min).');
  }
  const auth = need('CLOUD_RUN_AUTH', 'iam (deployed with --no-allow-unauthenticated) or public (--allow-unauthenticated)');
  if (auth !== 'iam' && auth !== 'public') {
    throw new EnvironmentError(`CLOUD_RUN_AUTH must be iam (deployed with --no-allow-unauthenticated) or public (--allow-unauthenticated); got ${JSON.stringify(auth)}.`);
  }
  return {
    port: Number(env.PORT || 8080),
    project: need('GOOGLE_CLOUD_PROJECT', 'the project id'),
    location: need('TASKS_LOCATION', 'the queue\'s region, e.g. europe-west1'),
    queue: need('TASKS_QUEUE', 'the queue\'s id'),
    url: need('SERVICE_URL', 'the service\'s URL, e.g. https://orders-abc123-ew.a.run.app'),
    auth,
    tasksAccount: need('TASKS_SERVICE_ACCOUNT', 'the service account Cloud Tasks signs its tokens as'),
    schedulerAccount: need('SCHEDULER_SERVICE_ACCOUNT', 'the service account Cloud Scheduler signs its tokens as'),
    tasksEmulator: env.CLOUD_TASKS_EMULATOR_HOST?.trim() || undefined,
    namespace: env.DATASTORE_NAMESPACE?.trim() || undefined,
    requestTimeoutMs: seconds * 1000,
    smtpUrl: need('SMTP_URL', 'the SMTP server alerts are sent through, e.g. smtps://user:password@smtp.example.com'),
    alertTo: need('ALERT_TO', 'who is told, e.g. oncall@example.com').split(',').map((a) => a.trim()),
    alertFrom: need('ALERT_FROM', 'the sender, e.g. locker@example.com'),
  };
}

/** One JSON line per event: Cloud Logging reads `severity` and `message`. */
function log(severity: 'INFO' | 'ERROR', message: string, fields: Record<string, unknown> = {}): void {
  (severity === 'ERROR' ? console.error : console.log)(JSON.stringify({ severity, message, ...fields }));
}

/** The Cloud Tasks client: Google's, or a local emulator's when CLOUD_TASKS_EMULATOR_HOST is set. */
function tasksClient(config: Config): CloudTasksClient {
  if (config.tasksEmulator === undefined) return new CloudTasksClient();
  const [host, port] = config.tasksEmulator.split(':');
  if (!host || !Number.isInteger(Number(port))) throw new EnvironmentError('CLOUD_TASKS_EMULATOR_HOST must be host:port.');
  return new CloudTasksClient({ apiEndpoint: host, port: Number(port), sslCreds: grpc.credentials.createInsecure() });
}

/**
 * Who may call a route: one service account. Behind Cloud Run's IAM check every token arrives
 * with its signature removed, and every invoker gets through, so the account is checked here; on
 * a public service the token arrives whole and its signature is verified here.
 */
function onlyAccount(config: Config, account: string): Authenticator {
  const options = { audience: config.url, serviceAccountEmail: account };
  return config.auth === 'iam' ? cloudRunIamAuthenticator(options) : oidcAuthenticator(options);
}

/** Builds the service and listens on PORT; on SIGTERM shuts it down and exits 0. */
async function start(env: NodeJS.ProcessEnv): Promise<Server> {
  const config = readConfig(env);
  const tasks = tasksClient(config);
  const datastore = new Datastore({ projectId: config.project });
  const alerter = new EmailAlerter({ transport: config.smtpUrl, to: config.alertTo, from: config.alertFrom });
  const locker = new Locker({
    store: new DatastoreStore(datastore, config.namespace === undefined ? {} : { namespaces: [config.namespace] }),
    queue: new CloudTasksQueue({
      client: tasks,
      project: config.project,
      location: config.location,
      queue: config.queue,
      target: { type: 'http', url: config.url, oidc: { serviceAccountEmail: config.tasksAccount } },
      // Cloud Tasks waits as long as Cloud Run lets a request run, not less.
      dispatchDeadlineMs: config.requestTimeoutMs,
    }),
    // The task routes take the tasks account only.
    authenticate: onlyAccount(config, config.tasksAccount),
    alerter,
    maxRetries: 10,
    // A held lease is not overload: 409 retries only the refused task (see docs/concepts/throttling.md).
    lockFailedStatus: 409,
    // The service's --timeout: an attempt is stopped (ctx.signal) a margin before Cloud Run would
    // cut its request, and its lease handed back (see docs/concepts/shutdown-and-time-limits.md).
    requestTimeout: config.requestTimeoutMs,
  });
  const orderKey = (id: string) => datastore.key({ namespace: config.namespace, path: ['Order', id] });

  const app = express();
  app.disable('x-powered-by');

  // Step 1: charge. Pass ctx.signal to your own I/O, so a shutdown or a timeout stops it.
  app.post('/tasks/order/charge', locker.handle<Order>(async (ctx) => {
    if (ctx.entity.amountCents > CHARGE_LIMIT_CENTS) {
      throw new PermanentError(`the provider refuses ${ctx.entity.amountCents} cents`); // failed for good, alerted
    }
    ctx.entity.charged = true; // saved with the step
    await ctx.schedule('/tasks/order/receipt'); // the next step, committed with this one
  }, (props) => new Order(props), { kinds: ['Order'] }));

  // Step 2: the receipt. Returning without scheduling completes the chain.
  app.post('/tasks/order/receipt', locker.handle<Order>((ctx) => {
    ctx.entity.receiptSent = true;
  }, (props) => new Order(props), { kinds: ['Order'] }));

  // The sweep, called by Cloud Scheduler every minute: its account only, not the tasks account.
  app.post('/sweep', locker.sweepHandler({ authenticate: onlyAccount(config, config.schedulerAccount) }));

  // Starts an order's chain. Not authenticated here: deploy with --no-allow-unauthenticated, so
  // Cloud Run admits only principals with roles/run.invoker (with CLOUD_RUN_AUTH=public, anyone:
  // put your own check here).
  app.post('/orders/:id', express.json(), async (req, res) => {
    const amountCents: unknown = req.body?.amountCents;
    if (!Number.isSafeInteger(amountCents) || (amountCents as number) <= 0) {
      res.status(400).json({ error: 'amountCents must be a positive whole number' });
      return;
    }
    try {
      const step = await locker.schedule(orderKey(req.params.id), new Order({ amountCents: amountCents as number }), '/tasks/order/charge');
      res.status(202).json(step);
    } catch (error) {
      if (error instanceof ChainBusyError) res.status(409).json({ error: error.message });
      else {
        log('ERROR', 'could not start the order', { id: req.params.id, error: String(error) });
        res.status(503).json({ error: 'try again' });
      }
    }
  });

  // An order's state: scheduled, running, complete, failed ...
  app.get('/orders/:id', async (req, res) => {
    const step = await locker.inspect().step(orderKey(req.params.id)).catch(() => null);
    if (step === null) res.status(503).json({ error: 'try again' });
    else if (step === undefined) res.status(404).json({ error: 'no such order' });
    else res.json({ state: step.state, seq: step.seq, tries: step.tries, error: step.errorMessage, ...step.properties });
  });

  const server = app.listen(config.port);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  log('INFO', 'listening', { port: config.port });

  // Cloud Run sends SIGTERM, then SIGKILL 10 s later. The Locker stops first: running steps finish
  // and store their outcome, a task arriving meanwhile is answered 503 and retried elsewhere. Then
  // the HTTP server closes, then the clients.
  process.once('SIGTERM', () => {
    log('INFO', 'SIGTERM: shutting down');
    void (async () => {
      await locker.shutdown();
      log('INFO', 'locker shut down');
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeIdleConnections(); });
      await alerter.shutdown();
      await tasks.close();
      log('INFO', 'stopped');
      process.exit(0);
    })().catch((error: unknown) => {
      log('ERROR', 'shutdown failed', { error: String(error) });
      process.exit(1);
    });
  });
  return server;
}

/**
 * Starts the service. Never rejects: a missing or wrong variable is one line on stderr and exit
 * code 2, any other failure to start (the library's ConfigError included) exit code 1.
 */
async function main(): Promise<void> {
  try {
    await start(process.env);
  } catch (error) {
    const environment = error instanceof EnvironmentError;
    log('ERROR', environment ? `configuration error: ${error.message}` : `failed to start: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    process.exit(environment ? 2 : 1);
  }
}

void main();

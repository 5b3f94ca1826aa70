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
 *   TASKS_SERVICE_ACCOUNT   the account Cloud Tasks and Cloud Scheduler sign their tokens as
 *   SMTP_URL, ALERT_TO, ALERT_FROM   where alerts go (ALERT_TO may list several, comma-separated)
 *   REQUEST_TIMEOUT_SECONDS the service's --timeout, 90 to 1800 (default 300, Cloud Run's default)
 *   DATASTORE_NAMESPACE     optional: the namespace of every entity (default: the default one)
 *   PORT                    set by Cloud Run (8080 when unset)
 */
import type { Server } from 'node:http';
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '@google-cloud/tasks';
import {
  ChainBusyError, CloudTasksQueue, ConfigError, DatastoreStore, EmailAlerter, Locker, PermanentError,
  oidcAuthenticator, type OidcTokenVerifier, type Properties,
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
  tasksAccount: string;
  namespace: string | undefined;
  requestTimeoutMs: number;
  smtpUrl: string;
  alertTo: string[];
  alertFrom: string;
}

/** Reads the environment; throws `ConfigError` naming the first variable that is missing or wrong. */
function readConfig(env: NodeJS.ProcessEnv): Config {
  const need = (name: string, what: string): string => {
    const value = env[name]?.trim();
    if (!value) throw new ConfigError(`${name} is not set: set it to ${what}.`);
    return value;
  };
  const seconds = Number(env.REQUEST_TIMEOUT_SECONDS?.trim() || 300);
  if (!Number.isInteger(seconds) || seconds < 90 || seconds > 1800) {
    throw new ConfigError('REQUEST_TIMEOUT_SECONDS must be the service\'s --timeout, 90 to 1800 (a task\'s dispatch deadline is at most 30 min).');
  }
  return {
    port: Number(env.PORT || 8080),
    project: need('GOOGLE_CLOUD_PROJECT', 'the project id'),
    location: need('TASKS_LOCATION', 'the queue\'s region, e.g. europe-west1'),
    queue: need('TASKS_QUEUE', 'the queue\'s id'),
    url: need('SERVICE_URL', 'the service\'s URL, e.g. https://orders-abc123-ew.a.run.app'),
    tasksAccount: need('TASKS_SERVICE_ACCOUNT', 'the service account Cloud Tasks signs its tokens as'),
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

/** Google's clients. Production uses the defaults; a local run or a test passes clients for emulators. */
export interface GoogleClients {
  tasks: CloudTasksClient;
  /** Verifies the OIDC tokens of tasks and of the Scheduler job; defaults to Google's certificates. */
  tokens?: OidcTokenVerifier;
}

/** Builds the service and listens on PORT; on SIGTERM shuts it down and exits 0. */
async function start(env: NodeJS.ProcessEnv, google: GoogleClients): Promise<Server> {
  const config = readConfig(env);
  const datastore = new Datastore({ projectId: config.project });
  const alerter = new EmailAlerter({ transport: config.smtpUrl, to: config.alertTo, from: config.alertFrom });
  const locker = new Locker({
    store: new DatastoreStore(datastore, config.namespace === undefined ? {} : { namespaces: [config.namespace] }),
    queue: new CloudTasksQueue({
      client: google.tasks,
      project: config.project,
      location: config.location,
      queue: config.queue,
      target: { type: 'http', url: config.url, oidc: { serviceAccountEmail: config.tasksAccount } },
      // Cloud Tasks waits as long as Cloud Run lets a request run, not less.
      dispatchDeadlineMs: config.requestTimeoutMs,
    }),
    authenticate: oidcAuthenticator({ audience: config.url, serviceAccountEmail: config.tasksAccount, client: google.tokens }),
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

  // The sweep, called by Cloud Scheduler every minute with the same account's OIDC token.
  app.post('/sweep', locker.sweepHandler());

  // Starts an order's chain. Not authenticated here: deploy with --no-allow-unauthenticated, so
  // Cloud Run admits only principals with roles/run.invoker.
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
      await google.tasks.close();
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
 * Starts the service. Never rejects: a configuration error is one line on stderr and exit code 2,
 * any other failure to start exit code 1.
 */
export async function main(env: NodeJS.ProcessEnv = process.env, google?: GoogleClients): Promise<Server | undefined> {
  try {
    return await start(env, google ?? { tasks: new CloudTasksClient() });
  } catch (error) {
    const config = error instanceof ConfigError;
    log('ERROR', `${config ? 'configuration error' : 'failed to start'}: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(config ? 2 : 1);
  }
}

// Run as the entry point (node main.js); a test imports main() and passes its own clients.
// In an ES module project, write `await main();` instead.
if (require.main === module) void main();

/**
 * Builds the example's parts from its configuration: the store, the queue, the alerter and the
 * Locker that ties them together. Every constructor here checks its options, so a bad value
 * surfaces as a `ConfigError` before the app listens.
 */
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '@google-cloud/tasks';
import { grpc } from 'google-gax';
import {
  appEngineAuthenticator, cloudRunIamAuthenticator, CloudTasksQueue, DatastoreStore, EmailAlerter, LocalQueue, Locker, MemoryStore, oidcAuthenticator,
  type Alerter, type Authenticator, type Logger, type Queue, type Store,
} from '../src/index';
import type { ExampleConfig, QueueConfig } from './config';

/** The built parts, and how to stop them. */
export interface Parts {
  store: Store;
  queue: Queue;
  locker: Locker;
  /** Builds keys (without a connection when the store is in memory). */
  keys: Datastore;
  /** The namespace of every key the app writes. */
  namespace: string | undefined;
  /** The only account the sweep route takes, when it differs from the tasks account (Cloud Scheduler's). */
  sweepAuthenticate: Authenticator | undefined;
  /** Says in one line what the app runs on, e.g. `in-memory store, local dispatcher`. */
  description: string;
  /** Starts the in-process sweep of a local run (the deployed app is swept by Cloud Scheduler or cron). */
  startSweeping(): void;
  /**
   * Stops the Locker first (it lets running steps finish and store their outcome; their next
   * tasks still need the queue), then the queue, the alerter and the store's clients.
   */
  shutdown(): Promise<void>;
}

/** Builds every part; `baseUrl` is the app's own URL, asked at each delivery of the local dispatcher. */
export function buildParts(config: ExampleConfig, baseUrl: () => string): Parts {
  const closers: Array<() => Promise<void>> = [];
  const { store, keys, namespace, storeName } = buildStore(config);
  const { queue, authenticate, sweepAuthenticate, queueName } = buildQueue(config.queue, baseUrl, closers);
  let alerter: Alerter | undefined;
  if (config.alert) {
    const email = new EmailAlerter({ transport: config.alert.smtpUrl, to: config.alert.to, from: config.alert.from });
    closers.push(() => email.shutdown());
    alerter = email;
  }
  const locker = new Locker({
    store, queue, alerter, authenticate, maxRetries: config.maxRetries, leaseDuration: config.leaseDurationMs, stallAfter: config.stallAfterMs,
    // The schedules' records beside the app's entities: another app on the database keeps its own.
    ...(namespace !== undefined && { scheduleNamespace: namespace }),
  });
  return {
    store, queue, locker, keys, namespace, sweepAuthenticate,
    description: `${storeName}, ${queueName}${alerter ? ', email alerts' : ''}`,
    startSweeping() {
      if (config.queue.type === 'local') locker.startSweeping(config.queue.sweepIntervalMs);
    },
    async shutdown() {
      await locker.shutdown();
      await queue.shutdown?.();
      for (const close of closers) await close();
      await store.shutdown?.();
    },
  };
}

function buildStore(config: ExampleConfig): { store: Store; keys: Datastore; namespace: string | undefined; storeName: string } {
  if (config.store.type === 'memory') {
    return { store: new MemoryStore(), keys: new Datastore({ projectId: 'datastore-locker-example' }), namespace: undefined, storeName: 'in-memory store' };
  }
  const { projectId, namespace, emulatorHost } = config.store;
  const datastore = new Datastore({ projectId });
  const store = new DatastoreStore(datastore, namespace === undefined ? {} : { namespaces: [namespace] });
  const where = emulatorHost ? `the Datastore emulator at ${emulatorHost}` : `Datastore in project ${projectId}`;
  return { store, keys: datastore, namespace, storeName: `${where}${namespace ? `, namespace ${namespace}` : ''}` };
}

function buildQueue(config: QueueConfig, baseUrl: () => string, closers: Array<() => Promise<void>>): { queue: Queue; authenticate: Authenticator | undefined; sweepAuthenticate?: Authenticator; queueName: string } {
  if (config.type === 'local') {
    // The dispatcher signs its requests; the Locker checks the signature by default.
    return { queue: new LocalQueue({ baseUrl, logger: oneLineLogger }), authenticate: undefined, queueName: 'local dispatcher' };
  }
  const { project, location, queue: queueId, target } = config;
  const client = target.type === 'http' && target.emulatorHost !== undefined ? emulatorClient(target.emulatorHost) : new CloudTasksClient();
  closers.push(() => client.close());
  const name = `Cloud Tasks queue ${queueId} in ${location}`;
  if (target.type === 'http') {
    const queue = new CloudTasksQueue({
      client, project, location, queue: queueId,
      target: { type: 'http', url: target.url, oidc: { serviceAccountEmail: target.serviceAccountEmail } },
    });
    // Behind Cloud Run's IAM check the token arrives without its signature: its claims are checked.
    const only = (serviceAccountEmail: string) => (target.auth === 'cloud-run-iam'
      ? cloudRunIamAuthenticator({ audience: target.url, serviceAccountEmail })
      : oidcAuthenticator({ audience: target.url, serviceAccountEmail }));
    const authenticate = only(target.serviceAccountEmail);
    const sweepAuthenticate = target.schedulerAccount === undefined ? undefined : only(target.schedulerAccount);
    const how = target.auth === 'cloud-run-iam' ? 'OIDC behind Cloud Run IAM' : 'OIDC';
    return { queue, authenticate, sweepAuthenticate, queueName: `${name} (HTTP target ${target.url}, ${how})` };
  }
  const queue = new CloudTasksQueue({ client, project, location, queue: queueId, target: { type: 'appengine', service: target.service } });
  return { queue, authenticate: appEngineAuthenticator({ queues: [queueId] }), queueName: `${name} (App Engine target)` };
}

/** A Cloud Tasks client for an emulator at `host:port`, over plain gRPC. */
function emulatorClient(hostPort: string): CloudTasksClient {
  const [host, port] = hostPort.split(':');
  return new CloudTasksClient({ apiEndpoint: host, port: Number(port), sslCreds: grpc.credentials.createInsecure() });
}

/** Logs one line per message, like the Locker's default logger. */
const oneLineLogger: Logger = {
  info: (message, fields) => console.info(logLine(message, fields)),
  warn: (message, fields) => console.warn(logLine(message, fields)),
  error: (message, fields) => console.error(logLine(message, fields)),
};

function logLine(message: string, fields?: Record<string, unknown>): string {
  return `datastore-locker: ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`;
}

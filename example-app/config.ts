/**
 * The example app's configuration, read from the environment by one pure function: the
 * environment in, a complete, checked description of what to build out. Nothing here connects to
 * anything; `wiring.ts` builds the parts from the result.
 *
 * Without any variable the app runs embedded: an in-memory store and the local dispatcher.
 * `DATASTORE_EMULATOR_HOST` or `GOOGLE_CLOUD_PROJECT` switch to Datastore, `CLOUD_TASKS_QUEUE` to
 * Cloud Tasks, `ALERT_SMTP_URL` to email alerts (see app.yaml for every variable).
 */
import { ConfigError } from '../src/index';

/** Where entities live. */
export type StoreConfig =
  | { type: 'memory' }
  | {
      type: 'datastore';
      /** The project the Datastore client uses. */
      projectId: string;
      /** The namespace every key of the app lives in; undefined for the default namespace. */
      namespace: string | undefined;
      /** Set when the client talks to an emulator (the client reads it from the environment). */
      emulatorHost: string | undefined;
    };

/** Where Cloud Tasks delivers the app's tasks. */
export type TargetConfig =
  | {
      type: 'http';
      /** The app's public base URL; also the audience of the OIDC token. */
      url: string;
      /** The service account Cloud Tasks signs the OIDC token as. */
      serviceAccountEmail: string;
      /**
       * How tokens arrive: `cloud-run-iam` behind Cloud Run's IAM check (`CLOUD_RUN_AUTH=iam`, the
       * signature removed by the front), `oidc` whole (`CLOUD_RUN_AUTH=public`, or off Cloud Run).
       */
      auth: 'cloud-run-iam' | 'oidc';
      /** The only account the sweep (POST /sweep) takes (`SCHEDULER_SERVICE_ACCOUNT`); the tasks account when unset. */
      schedulerAccount: string | undefined;
      /** `CLOUD_TASKS_EMULATOR_HOST`: a local Cloud Tasks emulator (plain gRPC), for a local run. */
      emulatorHost: string | undefined;
    }
  | {
      type: 'appengine';
      /** The App Engine service tasks are routed to; undefined for the default routing. */
      service: string | undefined;
    };

/** How tasks are delivered. */
export type QueueConfig =
  | {
      type: 'local';
      /** How often the outbox is swept in-process, ms. */
      sweepIntervalMs: number;
    }
  | { type: 'cloud-tasks'; project: string; location: string; queue: string; target: TargetConfig };

/** Who is told about lease overwrites and permanent failures, by email. */
export interface AlertConfig {
  /** A nodemailer connection URL, e.g. `smtps://user:pass@smtp.example.com`. */
  smtpUrl: string;
  to: string[];
  from: string;
}

/**
 * Who may use the status page and start chains: on a local run (listening on loopback only),
 * whoever reaches it from this machine, through `localhost` or a loopback address (`Host` checked,
 * against DNS rebinding) and from the app's own pages (`Sec-Fetch-Site`, `Origin`); otherwise (App
 * Engine, Cloud Run, or `HOST` set to listen wider, as on GKE, a VM or in Docker) only the people
 * Identity-Aware Proxy admits (`EXAMPLE_IAP_AUDIENCE`, optionally narrowed by `EXAMPLE_OPERATORS`),
 * and nobody when that is not set.
 */
export type OperatorConfig =
  | { type: 'local' }
  | { type: 'iap'; audience: string; allow: string[] | undefined }
  | { type: 'closed' };

/** Everything the example app needs to start. */
export interface ExampleConfig {
  port: number;
  /**
   * The address the server binds: loopback (`127.0.0.1`) unless `HOST` says otherwise, or on App
   * Engine and Cloud Run, whose front ends reach the app on every interface (`0.0.0.0`).
   */
  host: string;
  /** Start one counter chain and one order chain when the app starts. */
  autostart: boolean;
  /** The Locker's `maxRetries`: failed attempts before a step fails for good. */
  maxRetries: number;
  /** The Locker's `leaseDuration`, ms. */
  leaseDurationMs: number;
  /** The Locker's `stallAfter`, ms: how long a step may go without progress before the sweep re-delivers it. */
  stallAfterMs: number;
  /** Running on App Engine (`GAE_APPLICATION` set): enables the cron sweep route. */
  appEngine: boolean;
  store: StoreConfig;
  queue: QueueConfig;
  /** Undefined: alerts are only logged. */
  alert: AlertConfig | undefined;
  /** Who may use the status page and start chains. */
  operator: OperatorConfig;
}

/** The environment, as `process.env` has it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Every default, in one place. */
export const CONFIG_DEFAULTS = Object.freeze({
  port: 8080,
  /** A local run listens on loopback only; `HOST=0.0.0.0` opts in to listening wider. */
  host: '127.0.0.1',
  /** On App Engine and Cloud Run the platform's front end connects from outside the container. */
  deployedHost: '0.0.0.0',
  autostart: true,
  maxRetries: 5,
  /** Short, for a demo whose steps take milliseconds: a crashed step is taken over within 10 s. */
  leaseDurationMs: 10_000,
  /** A stalled step is re-delivered 20 s after its last progress (the library's default is 5 min). */
  stallAfterMs: 20_000,
  sweepIntervalMs: 5_000,
});

/**
 * Reads the configuration from `env`. Throws `ConfigError` with one sentence naming the variable
 * that is wrong or missing.
 */
export function readConfig(env: Env): ExampleConfig {
  const get = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const store = storeConfig(get);
  const leaseDurationMs = integer(get, 'EXAMPLE_LEASE_DURATION_MS', CONFIG_DEFAULTS.leaseDurationMs, 100, 3_600_000);
  const stallAfterMs = integer(get, 'EXAMPLE_STALL_AFTER_MS', Math.max(CONFIG_DEFAULTS.stallAfterMs, leaseDurationMs), 100, 86_400_000);
  if (stallAfterMs < leaseDurationMs) {
    throw new ConfigError(`EXAMPLE_STALL_AFTER_MS (${stallAfterMs}) must not be less than EXAMPLE_LEASE_DURATION_MS (${leaseDurationMs}): a running step would be re-delivered while its lease is fresh.`);
  }
  const deployed = get('GAE_APPLICATION') !== undefined || get('K_SERVICE') !== undefined;
  const host = get('HOST') ?? (deployed ? CONFIG_DEFAULTS.deployedHost : CONFIG_DEFAULTS.host);
  return {
    port: integer(get, 'PORT', CONFIG_DEFAULTS.port, 0, 65_535),
    host,
    autostart: flag(get, 'EXAMPLE_AUTOSTART', CONFIG_DEFAULTS.autostart),
    maxRetries: integer(get, 'EXAMPLE_MAX_RETRIES', CONFIG_DEFAULTS.maxRetries, 2, 100),
    leaseDurationMs,
    stallAfterMs,
    appEngine: get('GAE_APPLICATION') !== undefined,
    store,
    queue: queueConfig(get, store),
    alert: alertConfig(get),
    operator: operatorConfig(get, deployed, host),
  };
}

type Getter = (name: string) => string | undefined;

function storeConfig(get: Getter): StoreConfig {
  const emulatorHost = get('DATASTORE_EMULATOR_HOST');
  const projectId = get('GOOGLE_CLOUD_PROJECT') ?? get('DATASTORE_PROJECT_ID');
  const namespace = get('EXAMPLE_NAMESPACE');
  if (emulatorHost === undefined && get('GOOGLE_CLOUD_PROJECT') === undefined) {
    if (namespace !== undefined) throw new ConfigError('EXAMPLE_NAMESPACE is set, but the in-memory store has no namespaces: set GOOGLE_CLOUD_PROJECT or DATASTORE_EMULATOR_HOST to use Datastore.');
    return { type: 'memory' };
  }
  if (projectId === undefined) {
    throw new ConfigError('DATASTORE_EMULATOR_HOST is set but no project is: set GOOGLE_CLOUD_PROJECT (any id works with the emulator).');
  }
  return { type: 'datastore', projectId, namespace, emulatorHost };
}

const CLOUD_TASKS_COMPANIONS = ['CLOUD_TASKS_LOCATION', 'CLOUD_TASKS_TARGET', 'CLOUD_TASKS_URL', 'CLOUD_TASKS_SERVICE_ACCOUNT', 'CLOUD_TASKS_SERVICE', 'CLOUD_RUN_AUTH', 'SCHEDULER_SERVICE_ACCOUNT', 'CLOUD_TASKS_EMULATOR_HOST'];

function queueConfig(get: Getter, store: StoreConfig): QueueConfig {
  const queue = get('CLOUD_TASKS_QUEUE');
  if (queue === undefined) {
    const stray = CLOUD_TASKS_COMPANIONS.find((name) => get(name) !== undefined);
    if (stray !== undefined) throw new ConfigError(`${stray} is set but CLOUD_TASKS_QUEUE is not: set CLOUD_TASKS_QUEUE to use Cloud Tasks, or unset ${stray}.`);
    return { type: 'local', sweepIntervalMs: integer(get, 'EXAMPLE_SWEEP_INTERVAL_MS', CONFIG_DEFAULTS.sweepIntervalMs, 100, 3_600_000) };
  }
  const location = required(get, 'CLOUD_TASKS_LOCATION', 'CLOUD_TASKS_QUEUE is set', 'e.g. europe-west1');
  const project = required(get, 'GOOGLE_CLOUD_PROJECT', 'CLOUD_TASKS_QUEUE is set', 'the project of the queue');
  if (store.type !== 'datastore') throw new ConfigError('CLOUD_TASKS_QUEUE needs the Datastore store: set GOOGLE_CLOUD_PROJECT.');
  const onAppEngine = get('GAE_APPLICATION') !== undefined;
  const onCloudRun = !onAppEngine && get('K_SERVICE') !== undefined;
  const targetType = get('CLOUD_TASKS_TARGET') ?? (onAppEngine ? 'appengine' : 'http');
  if (targetType === 'appengine') {
    // App Engine's queue header is trusted only where App Engine strips it from outside requests.
    if (!onAppEngine) throw new ConfigError('CLOUD_TASKS_TARGET=appengine runs only on App Engine (GAE_APPLICATION is not set): elsewhere anyone can send X-AppEngine-QueueName. Set CLOUD_TASKS_TARGET=http.');
    for (const name of ['CLOUD_TASKS_URL', 'CLOUD_TASKS_SERVICE_ACCOUNT']) {
      if (get(name) !== undefined) throw new ConfigError(`${name} is set, but App Engine targets use neither a URL nor OIDC: unset it or set CLOUD_TASKS_TARGET=http.`);
    }
    return { type: 'cloud-tasks', project, location, queue, target: { type: 'appengine', service: get('CLOUD_TASKS_SERVICE') ?? get('GAE_SERVICE') } };
  }
  if (targetType !== 'http') throw new ConfigError(`CLOUD_TASKS_TARGET must be "http" or "appengine"; got ${JSON.stringify(targetType)}.`);
  if (get('CLOUD_TASKS_SERVICE') !== undefined) throw new ConfigError('CLOUD_TASKS_SERVICE is set, but it routes App Engine targets only: unset it or set CLOUD_TASKS_TARGET=appengine.');
  const url = required(get, 'CLOUD_TASKS_URL', 'CLOUD_TASKS_TARGET is http', "the app's public base URL, e.g. https://app.example.com");
  if (!/^https?:\/\/[^\s/]+/.test(url)) throw new ConfigError(`CLOUD_TASKS_URL must be an http(s) URL such as https://app.example.com; got ${JSON.stringify(url)}.`);
  const serviceAccountEmail = required(get, 'CLOUD_TASKS_SERVICE_ACCOUNT', 'CLOUD_TASKS_TARGET is http', 'the service account Cloud Tasks signs its OIDC token as');
  const cloudRunAuth = get('CLOUD_RUN_AUTH');
  if (onCloudRun && cloudRunAuth === undefined) {
    throw new ConfigError('CLOUD_RUN_AUTH is not set: on Cloud Run set it to iam (deployed with --no-allow-unauthenticated: Cloud Run checks tokens and removes their signature) or public (--allow-unauthenticated).');
  }
  if (!onCloudRun && cloudRunAuth !== undefined) throw new ConfigError('CLOUD_RUN_AUTH is set, but K_SERVICE is not: it applies on Cloud Run only. Unset it.');
  if (cloudRunAuth !== undefined && cloudRunAuth !== 'iam' && cloudRunAuth !== 'public') {
    throw new ConfigError(`CLOUD_RUN_AUTH must be iam (--no-allow-unauthenticated) or public (--allow-unauthenticated); got ${JSON.stringify(cloudRunAuth)}.`);
  }
  const schedulerAccount = get('SCHEDULER_SERVICE_ACCOUNT');
  if (schedulerAccount !== undefined && !schedulerAccount.includes('@')) throw new ConfigError('SCHEDULER_SERVICE_ACCOUNT must be the email of the account Cloud Scheduler signs its tokens as.');
  const target: TargetConfig = {
    type: 'http', url, serviceAccountEmail, auth: cloudRunAuth === 'iam' ? 'cloud-run-iam' : 'oidc', schedulerAccount, emulatorHost: get('CLOUD_TASKS_EMULATOR_HOST'),
  };
  return { type: 'cloud-tasks', project, location, queue, target };
}

function operatorConfig(get: Getter, deployed: boolean, host: string): OperatorConfig {
  const audience = get('EXAMPLE_IAP_AUDIENCE');
  const operators = get('EXAMPLE_OPERATORS');
  if (audience !== undefined) {
    if (!audience.startsWith('/projects/')) throw new ConfigError('EXAMPLE_IAP_AUDIENCE must be IAP\'s audience, e.g. /projects/123456789/apps/my-project.');
    const allow = operators?.split(',').map((a) => a.trim()).filter((a) => a !== '');
    return { type: 'iap', audience, allow: allow && allow.length > 0 ? allow : undefined };
  }
  if (operators !== undefined) throw new ConfigError('EXAMPLE_OPERATORS is set but EXAMPLE_IAP_AUDIENCE is not: operators are checked behind Identity-Aware Proxy.');
  // Open only where nobody else can connect: not deployed, and bound to loopback. "Not App Engine,
  // not Cloud Run" is no proof of a local run (GKE, a VM, Docker): listening wider closes it.
  return !deployed && isLoopback(host) ? { type: 'local' } : { type: 'closed' };
}

/** Whether `host` is a loopback address or name (`127.0.0.0/8`, `::1`, `localhost`). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare);
}

const ALERT_VARIABLES = ['ALERT_SMTP_URL', 'ALERT_TO', 'ALERT_FROM'] as const;

function alertConfig(get: Getter): AlertConfig | undefined {
  const given = ALERT_VARIABLES.filter((name) => get(name) !== undefined);
  if (given.length === 0) return undefined;
  const missing = ALERT_VARIABLES.filter((name) => get(name) === undefined);
  if (missing.length > 0) throw new ConfigError(`${given.join(' and ')} ${given.length > 1 ? 'are' : 'is'} set but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not: email alerts need all three.`);
  const smtpUrl = get('ALERT_SMTP_URL') as string;
  if (!/^smtps?:\/\/[^\s/]+/.test(smtpUrl)) throw new ConfigError('ALERT_SMTP_URL must be an SMTP URL such as smtps://user:password@smtp.example.com.');
  const to = (get('ALERT_TO') as string).split(',').map((a) => a.trim()).filter((a) => a !== '');
  return { smtpUrl, to, from: get('ALERT_FROM') as string };
}

function required(get: Getter, name: string, because: string, hint: string): string {
  const value = get(name);
  if (value === undefined) throw new ConfigError(`${because} but ${name} is not: set it to ${hint}.`);
  return value;
}

function integer(get: Getter, name: string, fallback: number, min: number, max: number): number {
  const raw = get(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}; got ${JSON.stringify(raw)}.`);
  }
  return Number(raw);
}

function flag(get: Getter, name: string, fallback: boolean): boolean {
  const raw = get(name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  if (raw === '0' || raw === 'false' || raw === 'no') return false;
  throw new ConfigError(`${name} must be 1 or 0 (true or false); got ${JSON.stringify(get(name))}.`);
}

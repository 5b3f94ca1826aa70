/**
 * The heartbeat that ticks recurring work is the sweep's job: one Cloud Scheduler job (or one App
 * Engine `cron.yaml` entry) calling the sweep route every minute. These print it, for the
 * `datastore-locker-heartbeat` command: the `gcloud scheduler jobs create http` command for Cloud
 * Run, or the `cron.yaml` entry for App Engine.
 */

/** What the Cloud Scheduler job needs. */
export interface SchedulerJobSpec {
  /** The job's name, e.g. `orders-sweep`. */
  name: string;
  /** The service's URL, e.g. `https://orders-abc-ew.a.run.app`: the token's audience. */
  url: string;
  /** The sweep route's path; `/sweep` by default. */
  path?: string;
  /** The job's location (region), e.g. `europe-west1`. */
  location: string;
  /** The service account the job's OIDC token names (the sweep route's authenticator admits it). */
  serviceAccount: string;
  /** The attempt deadline, s: at least the tick's budget (60 s) with the sweep after it. 600 by default. */
  attemptDeadlineS?: number;
}

/** The `gcloud` commands that create the job and run it once. */
export function schedulerJobCommand(spec: SchedulerJobSpec): string {
  const url = checkUrl(spec.url);
  const path = checkPath(spec.path ?? '/sweep');
  const deadline = spec.attemptDeadlineS ?? 600;
  if (!Number.isSafeInteger(deadline) || deadline < 15 || deadline > 1800) throw new RangeError(`the attempt deadline must be 15 to 1800 s (Cloud Scheduler's range for HTTP targets); got ${String(spec.attemptDeadlineS)}`);
  for (const [what, value] of [['name', spec.name], ['location', spec.location]] as const) {
    if (typeof value !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(value)) throw new RangeError(`the job's ${what} must be lower-case letters, digits and hyphens; got ${JSON.stringify(value)}`);
  }
  if (typeof spec.serviceAccount !== 'string' || !/^[^@\s'"]+@[^@\s'"]+$/.test(spec.serviceAccount)) throw new RangeError(`the service account must be an e-mail address; got ${JSON.stringify(spec.serviceAccount)}`);
  return [
    `gcloud scheduler jobs create http ${spec.name} --location=${spec.location} --schedule='* * * * *' \\`,
    `  --uri=${url}${path} --http-method=POST --attempt-deadline=${deadline}s \\`,
    `  --oidc-service-account-email=${spec.serviceAccount} --oidc-token-audience=${url}`,
    `gcloud scheduler jobs run ${spec.name} --location=${spec.location}`,
    '',
  ].join('\n');
}

/** The `cron.yaml` that calls the sweep route every minute on App Engine. */
export function cronYaml(path = '/sweep'): string {
  return ['cron:', '  - description: "datastore-locker sweep and heartbeat"', `    url: ${checkPath(path)}`, '    schedule: every 1 minutes', ''].join('\n');
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RangeError(`the service URL must be an absolute https URL; got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'https:' || parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '') throw new RangeError(`the service URL must be https://host with no path; got ${JSON.stringify(url)}`);
  return parsed.origin;
}

function checkPath(path: string): string {
  if (typeof path !== 'string' || !/^\/[A-Za-z0-9/_.-]*$/.test(path)) throw new RangeError(`the route's path must start with "/" and hold only letters, digits and /_.-; got ${JSON.stringify(path)}`);
  return path;
}

/**
 * The example app deployed on Cloud Run as the Cloud Run guide deploys it (--no-allow-unauthenticated,
 * CLOUD_RUN_AUTH=iam, a Cloud Tasks HTTP target), behind the modelled Cloud Run front, on the
 * Datastore emulator, its tasks created through the real CloudTasksClient on the loopback Cloud
 * Tasks server and delivered by the modelled dispatcher, its sweep called by the modelled Cloud
 * Scheduler job. The chain it starts completes through the front; the sweep runs with the
 * scheduler's account only; an invoker the front admits is refused on the task routes and the
 * sweep; and the same app deployed public refuses a forged stripped token.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCloudTasksServer, type CloudTasksServer } from '../support/cloud-tasks-server';
import { encode, idTokenClaims, startOidcIssuer, type OidcIssuer } from '../support/oidc-issuer';
import { startExample, waitFor, type ExampleProcess } from '../support/example-process';
import { freePort } from '../support/free-port';
import { startCloudRunFront, STRIPPED, type CloudRunFront } from '../support/cloud-run-front';
import { startDispatcher, type CloudTasksDispatcher } from '../support/cloud-tasks-dispatcher';
import { runSchedulerJob } from '../support/cloud-scheduler';
import { uniqueNamespace } from '../support/emulator';

const skip = process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)';
const TASKS = 'tasks@demo-project.iam.gserviceaccount.com';
const SCHEDULER = 'sweep@demo-project.iam.gserviceaccount.com';
const OTHER = 'someone@example.com';

/** The variables of the guide's `gcloud run deploy` for the example, with the loopback stand-ins. */
function deployEnv(port: number, url: string, tasksPort: number, auth: 'iam' | 'public'): Record<string, string> {
  return {
    PORT: String(port), K_SERVICE: 'locker-example', CLOUD_RUN_AUTH: auth, METADATA_SERVER_DETECTION: 'none',
    DATASTORE_EMULATOR_HOST: process.env.DATASTORE_EMULATOR_HOST!, DATASTORE_PROJECT_ID: process.env.DATASTORE_PROJECT_ID ?? 'locker-test',
    GOOGLE_CLOUD_PROJECT: process.env.DATASTORE_PROJECT_ID ?? 'locker-test', EXAMPLE_NAMESPACE: uniqueNamespace('example-fronts'),
    CLOUD_TASKS_QUEUE: 'steps', CLOUD_TASKS_LOCATION: 'europe-west1', CLOUD_TASKS_URL: url,
    CLOUD_TASKS_SERVICE_ACCOUNT: TASKS, SCHEDULER_SERVICE_ACCOUNT: SCHEDULER, CLOUD_TASKS_EMULATOR_HOST: `127.0.0.1:${tasksPort}`,
    EXAMPLE_AUTOSTART: '1',
  };
}

describe('example app on Cloud Run behind the modelled front (CLOUD_RUN_AUTH=iam)', { skip }, () => {
  let tasks: CloudTasksServer;
  let issuer: OidcIssuer;
  let front: CloudRunFront;
  let dispatcher: CloudTasksDispatcher | undefined;
  let app: ExampleProcess | undefined;
  before(async () => {
    [tasks, issuer] = await Promise.all([startCloudTasksServer(), startOidcIssuer()]);
    const port = await freePort();
    front = await startCloudRunFront({ upstream: `http://127.0.0.1:${port}`, auth: 'iam', issuer, invokers: [TASKS, SCHEDULER, OTHER], timeoutMs: 600_000 });
    app = await startExample({}, undefined, { ...process.env, ...deployEnv(port, front.url, tasks.port, 'iam') });
    dispatcher = startDispatcher({ server: tasks, queue: 'steps', issuer, retry: { minBackoffMs: 100, maxBackoffMs: 1000, maxDoublings: 5, maxAttempts: -1 } });
  });
  after(async () => {
    await dispatcher?.stop();
    await app?.stop();
    await Promise.all([tasks.close(), issuer.close(), front.close()]);
  });

  it('runs the chain it starts to the end, every task through the front and answered by the app', async () => {
    await waitFor('the order chain to finish', async () => (/^order .* step 3 ran: archived$/m.test(app!.stdout()) ? true : undefined));
    assert.ok(front.log.filter((e) => e.path.startsWith('/tasks/')).length >= 3, JSON.stringify(front.log));
    const attempts = dispatcher!.attempts;
    const last = new Map(attempts.map((a) => [a.task, a.status]));
    assert.ok(last.size >= 3 && [...last.values()].every((status) => status === 200), JSON.stringify(attempts));
    // The example's charge fails its first attempt on purpose: the dispatcher backed off and retried it.
    assert.ok(attempts.filter((a) => a.status !== 200).every((a) => a.status === 500 && a.backoffMs === 100), JSON.stringify(attempts));
    assert.ok(front.log.every((e) => e.by === 'app'), 'the front refused none of the tasks');
  });

  it('sweeps through the modelled Scheduler with the scheduler’s account, and refuses another invoker there and on the task routes', async () => {
    const job = { uri: `${front.url}/sweep`, serviceAccountEmail: SCHEDULER, audience: front.url };
    const swept = await runSchedulerJob(job, issuer);
    assert.equal(swept.status, 200, swept.body);
    assert.ok('resent' in (JSON.parse(swept.body) as object));
    assert.equal((await runSchedulerJob({ ...job, serviceAccountEmail: TASKS }, issuer)).status, 403, 'the tasks account may not sweep');
    assert.equal((await runSchedulerJob({ ...job, serviceAccountEmail: OTHER }, issuer)).status, 403, 'another invoker may not sweep');
    const path = dispatcher!.attempts[0]!.path;
    const other = issuer.sign(idTokenClaims({ aud: front.url, email: OTHER }));
    const res = await fetch(`${front.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${other}`, 'x-lock-key': 'x', 'x-lock-seq': '1' }, body: '{}' });
    assert.equal(res.status, 403, 'another invoker may not run a step');
    assert.deepEqual(front.log.filter((e) => e.path === '/sweep').map((e) => [e.status, e.by]), [[200, 'app'], [403, 'app'], [403, 'app']], 'the front let them in; the app refused');
    assert.deepEqual(front.log.filter((e) => e.path === path && e.status === 403).map((e) => e.by), ['app']);
  });
});

describe('example app on Cloud Run deployed public (CLOUD_RUN_AUTH=public)', { skip }, () => {
  let front: CloudRunFront;
  let app: ExampleProcess | undefined;
  before(async () => {
    const port = await freePort();
    front = await startCloudRunFront({ upstream: `http://127.0.0.1:${port}`, auth: 'public', timeoutMs: 600_000 });
    const env = { ...deployEnv(port, front.url, 9, 'public'), EXAMPLE_AUTOSTART: '0' };
    app = await startExample({}, undefined, { ...process.env, ...env });
  });
  after(async () => {
    await app?.stop();
    await front.close();
  });

  it('refuses a forged token whose signature claims Cloud Run removed it', async () => {
    for (const [route, email] of [['/sweep', SCHEDULER], ['/sweep', TASKS]] as const) {
      const forged = `${encode({ alg: 'RS256', typ: 'JWT', kid: 'k' })}.${encode(idTokenClaims({ aud: front.url, email }))}.${STRIPPED}`;
      const res = await fetch(`${front.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${forged}` } });
      assert.equal(res.status, 401, route);
    }
    assert.match(app!.stdout() + app!.stderr(), /signature was removed \(SIGNATURE_REMOVED_BY_GOOGLE\)/);
  });
});

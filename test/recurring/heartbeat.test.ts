// The heartbeat job printed by datastore-locker-heartbeat (package.json bin): the Cloud Scheduler
// command the Cloud Run guide runs, and the cron.yaml the App Engine guide deploys.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cronYaml, schedulerJobCommand } from '../../src/recurring/heartbeat';

const root = join(__dirname, '..', '..');
const bin = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['datastore-locker-heartbeat'];
const run = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve) => {
  execFile(process.execPath, [join(root, bin!), ...args], { cwd: root }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }));
});
const job = ['--name', 'orders-sweep', '--location', 'europe-west1', '--url', 'https://orders-abc-ew.a.run.app', '--service-account', 'sweep@demo.iam.gserviceaccount.com'];

describe('the datastore-locker-heartbeat command (package.json bin, built by npm test)', () => {
  it('prints the Cloud Scheduler job: every minute, POST to the sweep route, an OIDC token for the service URL', async () => {
    const { code, stdout } = await run(['cloud-run', ...job]);
    assert.equal(code, 0);
    assert.equal(stdout, [
      "gcloud scheduler jobs create http orders-sweep --location=europe-west1 --schedule='* * * * *' \\",
      '  --uri=https://orders-abc-ew.a.run.app/sweep --http-method=POST --attempt-deadline=600s \\',
      '  --oidc-service-account-email=sweep@demo.iam.gserviceaccount.com --oidc-token-audience=https://orders-abc-ew.a.run.app',
      'gcloud scheduler jobs run orders-sweep --location=europe-west1',
      '',
    ].join('\n'));
  });

  it('prints the cron.yaml the App Engine guide deploys', async () => {
    const { code, stdout } = await run(['app-engine']);
    assert.equal(code, 0);
    assert.equal(stdout, readFileSync(join(root, 'docs', 'guides', 'app-engine', 'cron.yaml'), 'utf8'));
    assert.equal((await run(['app-engine', '--path', '/ops/sweep'])).stdout, cronYaml('/ops/sweep'));
  });

  it('exits 2 with a usage line for a missing flag, an unknown one, a bad URL or target', async () => {
    for (const args of [['cloud-run', ...job.slice(2)], ['cloud-run', ...job, '--schedule', '* * * * *'], ['cloud-run', ...job.slice(0, 5), 'http://x', ...job.slice(6)], ['kubernetes'], []]) {
      const { code, stdout, stderr } = await run(args);
      assert.equal(code, 2, args.join(' '));
      assert.equal(stdout, '');
      assert.match(stderr, /usage: datastore-locker-heartbeat cloud-run/);
    }
  });

  it('refuses a deadline Cloud Scheduler does not take and a name it would not', () => {
    const spec = { name: 'orders-sweep', location: 'europe-west1', url: 'https://x.a.run.app', serviceAccount: 'a@b.c' };
    assert.throws(() => schedulerJobCommand({ ...spec, attemptDeadlineS: 5 }), /15 to 1800/);
    assert.throws(() => schedulerJobCommand({ ...spec, name: 'Orders Sweep' }), /lower-case/);
    assert.throws(() => schedulerJobCommand({ ...spec, url: 'https://x.a.run.app/sweep' }), /no path/);
  });
});

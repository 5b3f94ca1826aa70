// The deployment guides and the throttling page are part of the documentation's contract: every
// TypeScript block in them type-checks against the library, every relative link reaches a file,
// and the Cloud Run guide's timeout, the example's cron URL and route agree with what the code does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { docBlockProblems, typeCheckedBlocks } from '../support/doc-typecheck';

const ROOT = path.join(__dirname, '..', '..');
const PAGES = ['docs/guides/deploy-cloud-run.md', 'docs/guides/deploy-app-engine.md', 'docs/concepts/throttling.md'];

function read(page: string): string {
  return readFileSync(path.join(ROOT, page), 'utf8');
}

function tsBlocks(text: string): string[] {
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('deployment guides and the throttling page', () => {
  it('has TypeScript blocks on every page that shows code', () => {
    assert.deepEqual(PAGES.map((page) => tsBlocks(read(page)).length > 0), [true, true, true]);
  });

  it('type-checks every TypeScript block against the library', async () => {
    // One program over every block of the documentation, built once per `npm test` (support/doc-typecheck.ts).
    const checked = typeCheckedBlocks().filter((b) => PAGES.includes(b.page));
    assert.deepEqual(checked.map((b) => b.code).sort(), PAGES.flatMap((page) => tsBlocks(read(page))).sort(), 'every block of these pages is type-checked');
    const problems = (await docBlockProblems()).filter((p) => PAGES.includes(p.page)).map((p) => `${path.basename(p.page, '.md')}-${p.index}.ts: ${p.message}`);
    assert.deepEqual(problems, []);
  });

  it('links only to files that exist', () => {
    for (const page of PAGES) {
      for (const [, target] of read(page).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        assert.ok(existsSync(path.join(ROOT, path.dirname(page), target!)), `${page} links to ${target}, which does not exist`);
      }
    }
  });

  it('deploys Cloud Run with the timeout its main.ts reads, and the Scheduler job with the audience it checks', () => {
    const guide = read('docs/guides/deploy-cloud-run.md');
    const timeout = /--timeout=(\d+)/.exec(guide)?.[1];
    assert.ok(timeout);
    assert.match(guide, new RegExp(`REQUEST_TIMEOUT_SECONDS=${timeout}\\b`), 'the variable repeats --timeout');
    assert.match(guide, /--uri=\$URL\/sweep --http-method=POST --attempt-deadline=(\d+)s \\\n\s+--oidc-service-account-email=\$SCHEDULER_SA --oidc-token-audience=\$URL\n/);
    assert.equal(/--attempt-deadline=(\d+)s/.exec(guide)?.[1], timeout, 'the Scheduler job waits as long as the service lets a sweep run');
    assert.match(guide, /SERVICE_URL=\$URL,/);
    // The mode main.ts trusts is the mode the service is deployed in, and each route's account is the one its caller signs as.
    const deploys = guide.replace(/\\\n/g, ' ').split('\n').filter((line) => line.startsWith('gcloud run deploy '));
    assert.equal(deploys.length, 2, 'the guide’s service and the example app');
    for (const deploy of deploys) {
      assert.equal(/--no-allow-unauthenticated/.test(deploy), /CLOUD_RUN_AUTH=iam\b/.test(deploy), deploy);
    }
    assert.match(guide, /TASKS_SERVICE_ACCOUNT=\$TASKS_SA,SCHEDULER_SERVICE_ACCOUNT=\$SCHEDULER_SA,/);
  });

  it('tells App Engine users the cron URL the example mounts', () => {
    const cron = /url: (\S+)/.exec(readFileSync(path.join(ROOT, 'cron.yaml'), 'utf8'))?.[1];
    assert.equal(cron, '/sweep');
    assert.match(read('docs/guides/deploy-app-engine.md'), /url: \/sweep\n/);
    assert.match(readFileSync(path.join(ROOT, 'example-app', 'app.ts'), 'utf8'), /app\.get\('\/sweep', deps\.locker\.sweepHandler\(\{ authenticate: appEngineCronAuthenticator\(\) \}\)\)/);
  });
});

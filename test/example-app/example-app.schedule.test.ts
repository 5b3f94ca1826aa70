/**
 * The example app's recurring work: the `heartbeat-report` schedule is written by the local
 * sweep's first tick and shows on the app's status page (`/schedules`, `/schedules.json` and the
 * overview); an operator runs it now through the confirm page (its form posted twice: one run) and
 * pauses it. The app runs as a child process on the in-memory store with the local dispatcher.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { REPORT } from '../../example-app/report';
import { startExample, waitFor, type ExampleProcess } from '../support/example-process';

interface ScheduleJson {
  name: string;
  cron: string;
  state: string;
  started: number;
  next?: string;
  last?: { outcome: string; keyPath?: string };
}

async function schedule(url: string): Promise<ScheduleJson | undefined> {
  const res = await fetch(`${url}/schedules.json`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { schedules: ScheduleJson[] }).schedules.find((s) => s.name === REPORT.name);
}

/** A page's CSRF cookie and the token its forms repeat. */
async function pageWithToken(url: string): Promise<{ html: string; cookie: string; token: string }> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const html = await res.text();
  const token = /name="csrf" value="([\w-]+)"/.exec(html)?.[1];
  assert.ok(cookie && token, 'the page set a CSRF cookie and repeats it in its forms');
  return { html, cookie, token };
}

function postForm(url: string, cookie: string, form: Record<string, string>): Promise<Response> {
  return fetch(url, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
}

function reportLines(app: ExampleProcess): string[] {
  return app.stdout().match(/^report Report:"heartbeat-report" step \d+ ran: .*$/gm) ?? [];
}

describe('example app: a schedule every minute on the status page', () => {
  let app: ExampleProcess | undefined;
  after(async () => { await app?.stop(); });

  it('shows heartbeat-report, runs it now once per confirm page, and pauses it', async () => {
    app = await startExample({ EXAMPLE_AUTOSTART: '0', EXAMPLE_SWEEP_INTERVAL_MS: '300' });
    const url = app.url;
    const declared = await waitFor('the first tick to write the schedule', () => schedule(url), 20_000);
    assert.equal(declared.cron, '* * * * *');
    assert.equal(declared.state, 'active');
    assert.ok(declared.next !== undefined && Date.parse(declared.next) - Date.now() <= 61_000, `the next run within a minute: ${declared.next}`);

    const overview = await (await fetch(`${url}/`)).text();
    assert.match(overview, /<tr data-schedule="heartbeat-report" data-state="active"/, 'the overview shows the schedule');

    const confirm = await pageWithToken(`${url}/schedules/run-now?name=${REPORT.name}`);
    const id = /name="id" value="([^"]+)"/.exec(confirm.html)?.[1];
    assert.ok(id);
    const form = { name: REPORT.name, id, csrf: confirm.token };
    for (let i = 0; i < 2; i++) {
      const res = await postForm(`${url}/schedules/run-now`, confirm.cookie, form);
      assert.equal(res.status, 303, await res.text());
    }
    const ran = await waitFor('the run now to run', async () => {
      const view = await schedule(url);
      return view && view.started >= 1 && reportLines(app!).length >= view.started ? view : undefined;
    }, 30_000);
    assert.equal(ran.last?.keyPath, 'Report:"heartbeat-report"');
    // Every started run ran once (a minute's tick may have started one too): each step's line once.
    const lines = reportLines(app);
    assert.equal(new Set(lines.map((l) => /step (\d+)/.exec(l)![1])).size, lines.length, lines.join('\n'));
    assert.ok(ran.started <= 2, `the form posted twice started one run (and a tick at most one more): ${ran.started}`);

    const page = await pageWithToken(`${url}/schedules`);
    assert.match(page.html, /<tr data-schedule="heartbeat-report"[^]*?data-outcome="started"/);
    const paused = await postForm(`${url}/schedules/pause`, page.cookie, { name: REPORT.name, csrf: page.token });
    assert.equal(paused.status, 303);
    assert.equal((await schedule(url))?.state, 'paused');
    const forged = await postForm(`${url}/schedules/resume`, page.cookie, { name: REPORT.name, csrf: 'forged-token-forged-token-forged-token' });
    assert.equal(forged.status, 403);
    assert.equal((await schedule(url))?.state, 'paused', 'a forged form changed nothing');
  });
});

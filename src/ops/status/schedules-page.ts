/**
 * The status router's pages of schedules (`locker.recurring()`): every schedule, a page at a time
 * (`GET /schedules`, saying what an action just did), and the confirm page of "Run now", whose form
 * carries the run's id, minted when the page was drawn: submitted twice, it starts one run.
 * Server-rendered, no script, every value escaped.
 */
import { escapeHtml } from '../../http/html';
import { layout, type PageContext } from './page';
import { hidden, schedulesTable } from './schedule-rows';
import type { ScheduleRow, SchedulesView } from './schedule-view';

/** The actions done on a schedule, confirmed on the page after the POST (`?done=`). */
export type ScheduleDone = 'paused' | 'already-paused' | 'resumed' | 'not-paused' | 'started' | 'busy' | 'failed';

const DONE_TEXT: Record<ScheduleDone, string> = {
  paused: 'Paused: no tick starts it until it is resumed.',
  'already-paused': 'It was paused already: nothing changed.',
  resumed: 'Resumed: it runs again from its next tick after now.',
  'not-paused': 'It was not paused: nothing changed.',
  started: 'Run now: its chain was started (or found started by an earlier submit of the same confirm page).',
  busy: 'Run now: not started, its entity is running another chain.',
  failed: 'Run now: the run could not be started; see its last run.',
};

/** Every `?done=` value the page confirms. */
export const SCHEDULE_DONE: readonly ScheduleDone[] = Object.keys(DONE_TEXT) as ScheduleDone[];

/** The page of schedules: a page of rows, a link to the next. */
export function renderSchedules(view: SchedulesView, ctx: PageContext, done?: { what: ScheduleDone; name: string }): string {
  const confirmed = done ? `<p class="done" role="status"><strong>${escapeHtml(done.name)}</strong>: ${escapeHtml(DONE_TEXT[done.what])}</p>` : '';
  const table = view.rows.length === 0
    ? '<p class="empty">No schedule in the store. A schedule is written by the first tick (a sweep) after <code>locker.recurring()</code> declares it.</p>'
    : schedulesTable(view, ctx);
  const more = view.cursor ? `<p class="more"><a href="${escapeHtml(`${ctx.base}/schedules?cursor=${encodeURIComponent(view.cursor)}`)}">More schedules →</a></p>` : '';
  const body = `<p><a href="${escapeHtml(ctx.base)}/">← all steps</a></p>
${confirmed}
<h2>Schedules <small>recurring work, newest declared first</small></h2>
${table}
${more}`;
  const json = `${ctx.base}/schedules.json${view.from !== undefined ? `?cursor=${encodeURIComponent(view.from)}` : ''}`;
  return layout(`Schedules · ${ctx.title}`, ctx, body, json);
}

/** The confirm page of "Run now": what it would start, and a form carrying the run's id. */
export function renderRunNowConfirm(row: ScheduleRow, id: string, ctx: PageContext): string {
  const v = row.view;
  const form = `<form method="post" action="${escapeHtml(`${ctx.base}/schedules/run-now`)}">${hidden('name', v.name)}${hidden('id', id)}${hidden('csrf', ctx.csrf)}<button class="big" type="submit">Run ${escapeHtml(v.name)} now</button></form>`;
  const paused = v.state === 'paused' ? '<p class="help">It is paused: this run starts anyway, and it stays paused.</p>' : '';
  const body = `<h2>Confirm: run <code>${escapeHtml(v.name)}</code> now</h2>
<p>One run of <code>${escapeHtml(v.name)}</code> starts its chain at <code>${escapeHtml(v.path)}</code> now, outside its ticks (<code>${escapeHtml(v.cron)}</code>, ${escapeHtml(v.timeZone)}).</p>
${paused}
${form}
<p class="help">This page's form starts one run: submitted again (a double click, a retried POST), it finds the run it started. Reload the page for another run.</p>
<p><a href="${escapeHtml(`${ctx.base}/schedules`)}">← back, do nothing</a></p>`;
  // No reload: the form keeps the id it was drawn with.
  return layout(`Run ${v.name} now · ${ctx.title}`, { ...ctx, refreshSeconds: 0 }, body, `${ctx.base}/schedules.json`);
}


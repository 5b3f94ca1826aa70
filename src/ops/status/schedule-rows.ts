/**
 * Schedules (`locker.recurring()`) as rows of the status page, for the overview's section and the
 * page of schedules: the name, the cron expression and its time zone, the state (active, paused,
 * removed; "not declared by this code"), the next run, the last run with its outcome, error and
 * entity (linked to its step page), the started and skipped counts, and the actions. Pause and
 * Resume are small POST forms with the CSRF token; Run now is a link to a confirm page (nothing is
 * done by following it). Server-rendered, no script, no `style` attribute, every value escaped
 * (schedule names are the app's data).
 */
import { escapeHtml } from '../../http/html';
import type { LastRun, ScheduleView } from '../../recurring/recurring-types';
import { formatAge } from './age';
import { scheduleActions, type SchedulesView, type ScheduleRow } from './schedule-view';

/** What the rows need of the page they are on (page.ts's context has it). */
export interface ScheduleRowsContext {
  /** Where the router is mounted (`req.baseUrl`). */
  base: string;
  /** The CSRF token the action forms repeat. */
  csrf: string;
}

/** What a schedule's state means, under its badge and in the guide. */
export const SCHEDULE_STATE_HELP: Record<ScheduleView['state'], string> = {
  active: 'runs on each tick of its expression',
  paused: 'an operator paused it: no tick starts it until it is resumed (ticks while paused are not made up)',
  removed: 'the code that last ticked does not declare it: it no longer runs (declaring it again brings it back)',
};

/** What each outcome of a run means. */
const OUTCOME_HELP: Record<LastRun['outcome'], string> = {
  started: 'its chain was started',
  busy: 'its entity was running another chain: not started',
  failed: 'it could not be started',
  skipped: 'skipped by the overlap or misfire policy',
};

const HEAD = ['Schedule', 'Cron', 'State', 'Next run', 'Last run', 'Runs', ''];

/** The overview's section: the first page of schedules, a link to them all; nothing when there is none. */
export function schedulesSection(view: SchedulesView, ctx: ScheduleRowsContext): string {
  if (view.rows.length === 0) return '';
  return `<section class="schedules" data-section="schedules">
<h2>Schedules <small>recurring work, newest declared first; <a href="${escapeHtml(`${ctx.base}/schedules`)}">all${view.cursor ? ' (more)' : ''} →</a></small></h2>
${schedulesTable(view, ctx)}
</section>`;
}

export function schedulesTable(view: SchedulesView, ctx: ScheduleRowsContext): string {
  return `<table class="steps schedules">
<thead><tr>${HEAD.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>
<tbody>
${view.rows.map((row) => scheduleRowHtml(row, ctx)).join('\n')}
</tbody>
</table>`;
}

/** One schedule's row (`<tr>`). */
export function scheduleRowHtml(row: ScheduleRow, ctx: ScheduleRowsContext): string {
  const v = row.view;
  const cells: Array<[string, string]> = [
    ['Schedule', `<strong>${escapeHtml(v.name)}</strong><div class="help">${escapeHtml(v.path)} · overlap ${escapeHtml(v.overlap)} · misfire ${escapeHtml(v.misfire)}</div>`],
    ['Cron', `<code>${escapeHtml(v.cron)}</code> <span class="help">${escapeHtml(v.timeZone)}</span>`],
    ['State', stateCell(v)],
    ['Next run', nextCell(row)],
    ['Last run', lastCell(row, ctx)],
    ['Runs', `<span data-count="started">${v.started}</span> started · <span data-count="skipped">${v.skipped}</span> skipped`],
    ['', actions(v, ctx)],
  ];
  return `<tr data-schedule="${escapeHtml(v.name)}" data-state="${escapeHtml(v.state)}" data-declared="${v.declaredHere}">${cells.map(([label, value]) => `<td data-label="${escapeHtml(label)}">${value}</td>`).join('')}</tr>`;
}

function stateCell(v: ScheduleView & { declaredHere: boolean }): string {
  const undeclared = v.declaredHere ? '' : ' <span class="mark stale" title="this code does not call locker.recurring() for it: Run now is not offered here, and a tick by this code marks it removed">not declared by this code</span>';
  const queued = v.queued ? `<div class="help">a run for <time datetime="${v.queued.toISOString()}">${v.queued.toISOString()}</time> waits for the previous one to end</div>` : '';
  return `<span class="state schedule-${escapeHtml(v.state)}" title="${escapeHtml(SCHEDULE_STATE_HELP[v.state])}">${escapeHtml(v.state)}</span>${undeclared}${queued}`;
}

function nextCell(row: ScheduleRow): string {
  const next = row.view.next;
  if (!next || row.nextInMs === undefined) return row.view.state === 'active' ? '—' : `— (${escapeHtml(row.view.state)})`;
  const when = row.nextInMs >= 0
    ? `in <span class="age" data-age="next">${formatAge(row.nextInMs)}</span>`
    : `<span class="age" data-age="next">${formatAge(-row.nextInMs)}</span> overdue`;
  return `<time datetime="${next.toISOString()}" title="${next.toISOString()}">${when}</time>`;
}

function lastCell(row: ScheduleRow, ctx: ScheduleRowsContext): string {
  const last = row.view.last;
  if (!last) return '— (never ran)';
  const outcomeClass = last.outcome === 'failed' ? 'failed' : last.outcome === 'started' ? 'running' : 'stale';
  const outcome = `<span class="state ${outcomeClass}" data-outcome="${escapeHtml(last.outcome)}" title="${escapeHtml(OUTCOME_HELP[last.outcome])}">${escapeHtml(last.outcome)}</span>`;
  const when = `<time datetime="${last.at.toISOString()}" title="${last.at.toISOString()}"><span class="age" data-age="last">${formatAge(row.lastAgeMs)}</span> ago</time>`;
  const entity = last.key === undefined ? ''
    : row.lastEncodedKey !== undefined
      ? `<div><a href="${escapeHtml(`${ctx.base}/step?key=${encodeURIComponent(row.lastEncodedKey)}`)}">${escapeHtml(row.lastKeyPath ?? last.key)}</a>${last.namespace ? ` <span class="help">in ${escapeHtml(last.namespace)}</span>` : ''}</div>`
      : `<div><code>${escapeHtml(last.key)}</code></div>`;
  const chain = last.chain !== undefined ? `<div class="help">chain <code>${escapeHtml(last.chain)}</code></div>` : '';
  const error = last.error !== undefined ? `<div class="error-message">${escapeHtml(last.error)}</div>` : '';
  return `${outcome} ${when}${entity}${chain}${error}`;
}

function actions(v: ScheduleView & { declaredHere: boolean }, ctx: ScheduleRowsContext): string {
  return scheduleActions(v).map((action) => {
    if (action === 'pause') return post(ctx, 'pause', v.name, 'Pause', 'No tick starts it until it is resumed');
    if (action === 'resume') return post(ctx, 'resume', v.name, 'Resume', 'Runs again from its next tick after now');
    return `<a class="run-now" href="${escapeHtml(`${ctx.base}/schedules/run-now?name=${encodeURIComponent(v.name)}`)}">Run now…</a>`;
  }).join(' ');
}

function post(ctx: ScheduleRowsContext, action: 'pause' | 'resume', name: string, label: string, help: string): string {
  return `<form method="post" action="${escapeHtml(`${ctx.base}/schedules/${action}`)}" class="action">${hidden('name', name)}${hidden('csrf', ctx.csrf)}<button type="submit" class="${action}" title="${escapeHtml(help)}">${escapeHtml(label)}</button></form>`;
}

export function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;
}

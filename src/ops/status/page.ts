/**
 * The status page's HTML: server-rendered, no script, every value escaped. It reloads itself
 * (meta refresh), fits a phone (rows become cards on narrow screens), marks stale leases and
 * stalled steps, shows times as ages, and puts each action in a small form (POST with the CSRF
 * token).
 */
import { escapeHtml } from '../../http/html';
import { INSPECT_STATES, type InspectState, type StepSummary } from '../inspect/step-view';
import { formatAge } from './age';
import type { LedgerView } from '../inspect/ledger-view';
import type { ActionName, DetailView, ListView, Section, StepRow } from './view-model';
import type { FanOutView } from '../../fanout/view';
import type { QueueDepth } from '../../types';
import { countsTableHtml } from './counts-table';
import { bulkLink, operationsTable } from './operation-page';
import { historyHtml } from './history-table';
import { throughputFigure } from './throughput-svg';
import { fanOutRowHtml, kickoffRowHtml } from './run-rows';
import { STYLE } from './style';
import { documentHtml } from './document';
import { schedulesSection } from './schedule-rows';

/** What every page needs besides its view. */
export interface PageContext {
  title: string;
  /** Where the router is mounted (`req.baseUrl`): links are built on it. */
  base: string;
  csrf: string;
  refreshSeconds: number;
  kinds: readonly string[];
  namespaces: readonly string[];
  columns: readonly string[];
  /** Trusted HTML above the lists. */
  intro: string;
}

const STATE_LABELS: Record<InspectState, string> = {
  stalled: 'Stalled', stale: 'Stale lease', failed: 'Failed', running: 'Running', scheduled: 'Scheduled', complete: 'Complete', cancelled: 'Cancelled',
};

const STATE_HELP: Record<InspectState, string> = {
  stalled: 'no progress for stallAfter, and its last task was sent longer ago than the sweep waits: a free lease nobody took, or a stale lease nobody took over; the sweep re-delivers it, or re-send it now',
  stale: 'an attempt holds a lease it stopped renewing (it crashed or hangs); the next delivery takes it over',
  failed: 'failed for good: the chain stopped; fix the cause, then retry it (or leave it: a kickoff starts a new chain)',
  running: 'an attempt holds a fresh lease',
  scheduled: 'waiting for its task; queued ones show how many tasks were sent and when the last was (a backlog is not a stall)',
  complete: 'the chain finished',
  cancelled: 'an operator cancelled the chain',
};

/** The list page. */
export function renderList(view: ListView, ctx: PageContext): string {
  // What needs a person first (failed, stalled, then alerts owed), across kinds; then the rest.
  const urgent = view.sections.filter((s) => NEEDS_A_PERSON.has(s.state));
  const rest = view.sections.filter((s) => !NEEDS_A_PERSON.has(s.state));
  const body = [
    ctx.intro, filtersForm(view, ctx), view.queue ? queueLine(view.queue) : '',
    ...urgent.map((s) => sectionHtml(s, view, ctx)),
    view.owed ? owedHtml(view.owed, ctx) : '',
    view.schedules ? schedulesSection(view.schedules, ctx) : '',
    view.counts ? countsTableHtml(view.counts, ctx.base, ctx.namespaces.length > 1) : '',
    view.throughput ? throughputFigure(view.throughput) : '',
    view.kickoffs && view.kickoffs.length > 0 ? runTable('Kickoffs', 'kickoffs', view.kickoffs.map((r) => kickoffRowHtml(r, ctx.base))) : '',
    view.fanOuts && view.fanOuts.length > 0 ? runTable('Fan-outs', 'fanouts', view.fanOuts.map((r) => fanOutRowHtml(r, ctx.base))) : '',
    view.operations && view.operations.length > 0 ? `<section class="operations"><h2>Bulk operations <small>newest first; <a href="${escapeHtml(ctx.base)}/operations">all →</a></small></h2>\n${operationsTable(view.operations, ctx.base)}</section>` : '',
    ...rest.map((s) => sectionHtml(s, view, ctx)),
  ];
  if (view.sections.every((s) => s.rows.length === 0) && !view.owed?.rows.length) body.push('<p class="empty">No steps to show.</p>');
  return layout(ctx.title, ctx, body.join('\n'), `${ctx.base}/steps.json${queryString(view.filters)}`);
}

/** The detail page of one entity. */
export function renderDetail(view: DetailView, ctx: PageContext): string {
  const s = view.step;
  const rows: Array<[string, string]> = [
    ['State', `${stateBadge(s)}<div class="help">${s.state ? escapeHtml(STATE_HELP[s.state]) : 'no step was ever scheduled'}</div>`],
    ['Kind', escapeHtml(s.kind)],
    ['Namespace', escapeHtml(s.namespace ?? '(default)')],
    ['Step (lock_seq)', String(s.seq)],
    ['Chain', code(s.chain)],
    ['Failed attempts', `${s.tries} of ${view.step.maxRetries}`],
    ['Lease holder', s.holder ? `${code(s.holder)} <span class="age" data-age="lease">${formatAge(s.leaseAgeMs)}</span> ago${s.staleLease ? ' <span class="mark stale">stale</span>' : ''}` : 'none (free)'],
    ['Last progress', timeCell(s.lastProgressAt, s.lastProgressAgeMs, 'progress')],
    ['Started', s.startedAt ? `${timeCell(s.startedAt, s.startedAgeMs, 'started')}<div class="help">when the step was scheduled (its ledger record committed)</div>` : '— (no ledger record)'],
    ['Task', code(s.task)],
    ...ledgerRows(s.ledger),
    ['Alerts sent', s.alerts.length > 0 ? s.alerts.map(code).join(' ') : 'none'],
    ['Limits', `lease ${formatAge(view.step.leaseDurationMs)}, stalled after ${formatAge(view.step.stallAfterMs)}`],
    ...Object.entries(view.extra).map(([title, value]): [string, string] => [escapeHtml(title), escapeHtml(value)]),
  ];
  const done = view.done ? `<p class="done" role="status">${escapeHtml(DONE[view.done])}</p>` : '';
  const error = s.error
    ? `<h2>Last error</h2>\n<p class="error-message">${escapeHtml(s.error.message)}</p>${s.error.stack ? `\n<pre class="stack">${escapeHtml(s.error.stack)}</pre>` : ''}`
    : '';
  const body = `<p><a href="${escapeHtml(ctx.base)}/">← all steps</a></p>
${done}
<h2 class="key">${escapeHtml(s.keyPath)}</h2>
<table class="detail" data-key="${escapeHtml(s.encodedKey)}" data-state="${s.state ?? ''}">
${rows.map(([label, value]) => `<tr><th>${label}</th><td>${value}</td></tr>`).join('\n')}
</table>
<div class="actions">${actionForms(s, view.actions, ctx, true)}</div>
${error}
${s.fanOut ? fanOutHtml(s.fanOut, view.now) : ''}
${historyHtml(s.history, view.now)}
<h2>Properties</h2>
<pre class="props">${escapeHtml(JSON.stringify(s.properties, jsonSafe, 2))}</pre>`;
  return layout(`${s.keyPath} · ${ctx.title}`, ctx, body, `${ctx.base}/step.json?key=${encodeURIComponent(s.encodedKey)}`);
}

/** What each fan-out state means, on the detail page. */
const FAN_OUT_HELP: Record<FanOutView['state'], string> = {
  writing: 'children are still being added; no join until it is sealed',
  sealed: 'every child was added; the join runs once the last one settled',
  joining: 'the join was started as the parent\'s next step',
  cancelled: 'an operator cancelled the fan-out',
};

/** The help line under a fan-out's state: a fan-out the sweep cancelled because its parent abandoned it says so, and why. */
function fanOutHelp(f: FanOutView): string {
  if (f.state === 'cancelled' && f.reason !== undefined) return `the sweep cancelled it and its children: ${f.reason}`;
  return FAN_OUT_HELP[f.state];
}

/** A parent's fan-out on its detail page: state, counts per state, the oldest pending child, sample failures (errors already redacted). */
function fanOutHtml(f: FanOutView, now: number): string {
  const c = f.counts;
  const counts = (['pending', 'succeeded', 'failed', 'cancelled', 'timedOut'] as const)
    .map((state) => `<span data-count="${state}">${c[state]}</span> ${state}`).join(' · ');
  const rows: Array<[string, string]> = [
    ['State', `${escapeHtml(f.state)}${f.outcome !== undefined ? `, outcome ${code(f.outcome)}` : ''}<div class="help">${escapeHtml(fanOutHelp(f))}</div>`],
    ['Children', `${counts} of <span data-count="total">${c.total}</span>`],
  ];
  if (f.oldestPending) {
    const age = Math.max(0, now - f.oldestPending.startedAt.getTime());
    rows.push(['Oldest pending', `${code(f.oldestPending.keyPath)}, started <span class="age" data-age="oldest-pending">${formatAge(age)}</span> ago`]);
  }
  if (f.sealedAt) rows.push(['Sealed', `<time datetime="${f.sealedAt.toISOString()}">${f.sealedAt.toISOString()}</time>`]);
  if (f.deadline) rows.push(['Deadline', `<time datetime="${f.deadline.toISOString()}">${f.deadline.toISOString()}</time>`]);
  const failures = f.failures.length === 0 ? '' : `
<h3>Failures (up to five)</h3>
<ul class="fanout-failures">
${f.failures.map((x) => `<li data-state="${escapeHtml(x.state)}">${code(x.keyPath)} ${escapeHtml(x.state)}${x.error !== undefined ? `: ${escapeHtml(x.error)}` : ''}</li>`).join('\n')}
</ul>`;
  return `<h2>Fan-out</h2>
<table class="detail fanout" data-fanout="${escapeHtml(f.id)}" data-fanout-state="${escapeHtml(f.state)}">
${rows.map(([label, value]) => `<tr><th>${label}</th><td>${value}</td></tr>`).join('\n')}
</table>${failures}`;
}

/** The ledger record's rows of the detail table (docs/design.md, section 5); one row saying there is none otherwise. */
function ledgerRows(ledger: LedgerView | undefined): Array<[string, string]> {
  if (!ledger) return [['Ledger record', 'none: the step is not live, or the Go library scheduled it']];
  const due = ledger.dueInMs >= 0
    ? `in <span class="age" data-age="due">${formatAge(ledger.dueInMs)}</span>`
    : `<span class="age" data-age="due">${formatAge(-ledger.dueInMs)}</span> overdue`;
  return [
    ['Ledger record', `${code(ledger.id)} · ${code(ledger.path)} · ${ledger.bodyBytes} bytes of payload`],
    ['Current task', `${code(ledger.task)}<div class="help">send <span data-ledger="sends">${ledger.sends}</span>, <span class="age" data-age="sent">${formatAge(ledger.sentAgeMs)}</span> ago</div>`],
    ['Sweep', `looks again ${due}${ledger.failures > 0 ? `; <span data-ledger="failures">${ledger.failures}</span> re-deliveries in a row could not create their task` : ''}`],
    ...(ledger.scheduleTime ? [['Runs at', `<time datetime="${ledger.scheduleTime.toISOString()}">${ledger.scheduleTime.toISOString()}</time>`] as [string, string]] : []),
  ];
}

/** A short page for a refusal or an error: no data. */
export function renderMessage(title: string, message: string, ctx: Pick<PageContext, 'base'> | undefined): string {
  const back = ctx ? `<p><a href="${escapeHtml(ctx.base)}/">← all steps</a></p>` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${back}</body></html>\n`;
}

const DONE: Record<ActionName, string> = {
  retry: 'Retried: the step runs again with a fresh retry budget, on a new task.',
  resend: 'Re-sent: a new task for the current step was created.',
  cancel: 'Cancelled: the step will not run; its tasks are dropped when they arrive.',
};

export function layout(title: string, ctx: PageContext, body: string, json: string): string {
  return documentHtml({
    title, siteTitle: ctx.title, base: ctx.base, refreshSeconds: ctx.refreshSeconds, body,
    header: `
<form class="search" method="get" action="${escapeHtml(ctx.base)}/search" role="search"><label>Find <input type="search" name="q" size="40" maxlength="1500" placeholder='a key as shown here, an encoded key or a chain id'></label> <button type="submit">Search</button></form>`,
    footer: `<footer>As JSON: <a href="${escapeHtml(json)}">${escapeHtml(json)}</a>${ctx.refreshSeconds > 0 ? ` · reloads every ${ctx.refreshSeconds} s` : ''}</footer>`,
  });
}

function filtersForm(view: ListView, ctx: PageContext): string {
  const f = view.filters;
  const select = (name: string, options: Array<[string, string]>, selected: string | undefined) =>
    `<label>${name} <select name="${name}">${options.map(([value, label]) => `<option value="${escapeHtml(value)}"${value === (selected ?? '') ? ' selected' : ''}>${escapeHtml(label)}</option>`).join('')}</select></label>`;
  const states: Array<[string, string]> = [['', 'overview'], ...INSPECT_STATES.map((s): [string, string] => [s, STATE_LABELS[s]])];
  const kinds: Array<[string, string]> = [['', 'all'], ...ctx.kinds.map((k): [string, string] => [k, k])];
  const namespaces: Array<[string, string]> = ctx.namespaces.length > 1 ? [['*', 'all'], ...ctx.namespaces.map((n): [string, string] => [n, n || '(default)'])] : [];
  return `<form class="filters" method="get" action="${escapeHtml(ctx.base)}/">
${select('state', states, f.state)}
${select('kind', kinds, f.kind)}
${namespaces.length > 0 ? select('namespace', namespaces, f.namespace ?? '*') : ''}
${select('order', [['oldest', 'oldest first'], ['newest', 'newest first']], f.order)}
<button type="submit">Show</button>
</form>`;
}

/** What the queue holds: a backlog shows here before anything looks stalled. */
function queueLine(q: QueueDepth): string {
  return `<p class="queue">Queue: <span data-queue="waiting">${q.waiting}</span> task${q.waiting === 1 ? '' : 's'} waiting, <span data-queue="in-flight">${q.inFlight}</span> being delivered.</p>`;
}

/** The bulk action a list offers: retry every failed chain, or re-send every stalled step, of its kind (and kickoff). */
function bulkActionFor(section: Section, view: ListView, ctx: PageContext): string {
  const filter = { kind: section.kind, namespace: section.namespace, ...(view.filters.kickoff !== undefined ? { kickoff: view.filters.kickoff } : {}) };
  const whose = view.filters.kickoff !== undefined ? ` of kickoff ${view.filters.kickoff}` : '';
  if (section.state === 'failed') return `<p class="bulk-action">${bulkLink(ctx.base, 'retry', filter, `Retry every failed ${section.kind}${whose}…`)}</p>`;
  if (section.state === 'stalled' && view.filters.kickoff === undefined) return `<p class="bulk-action">${bulkLink(ctx.base, 'resend', filter, `Resend every stalled ${section.kind}…`)}</p>`;
  return '';
}

/** The latest kickoffs or fan-outs, a row each with its progress bar. */
function runTable(title: string, name: string, rows: string[]): string {
  return `<section class="runs" data-runs="${name}"><h2>${escapeHtml(title)} <small>newest first, kept after they finished</small></h2>
<table class="runs"><tbody>
${rows.join('\n')}
</tbody></table></section>`;
}

/** The states that need a person: shown first on the overview, across kinds. */
const NEEDS_A_PERSON: ReadonlySet<InspectState> = new Set(['failed', 'stalled']);

/** The overview's section of entities owing an alert (none: no section). */
function owedHtml(owed: NonNullable<ListView['owed']>, ctx: PageContext): string {
  if (owed.rows.length === 0) return '';
  const head = ['Entity', 'State', 'Step', 'Tries', 'Lease', 'Last progress', 'Last error', ...ctx.columns, ''];
  return `<section class="owed" data-state="alerts-owed">
<h2>Alerts still owed <small>claimed and not yet marked sent (the alerter was down, or its sender died): the sweep sends them${owed.cut ? '; more ledger records were due than read, so there may be more' : ''}</small></h2>
<table class="steps">
<thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>
<tbody>
${owed.rows.map((row) => rowHtml(row, ctx)).join('\n')}
</tbody>
</table>
</section>`;
}

function sectionHtml(section: Section, view: ListView, ctx: PageContext): string {
  if (section.rows.length === 0 && !view.filters.state) return '';
  const where = `${section.kind}${section.namespace ? ` in ${section.namespace}` : ''}`;
  const head = ['Entity', 'State', 'Step', 'Tries', 'Lease', 'Last progress', 'Last error', ...ctx.columns, ''];
  const more = section.cursor
    ? `<p class="more"><a href="${escapeHtml(`${ctx.base}/${queryString({ ...view.filters, kind: section.kind, namespace: section.namespace, state: section.state, order: section.order, cursor: section.cursor })}`)}">More ${escapeHtml(STATE_LABELS[section.state].toLowerCase())} steps →</a></p>`
    : '';
  const rows = section.rows.length === 0 ? `<p class="empty">None.</p>` : `<table class="steps">
<thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>
<tbody>
${section.rows.map((row) => rowHtml(row, ctx)).join('\n')}
</tbody>
</table>`;
  return `<section class="state-${section.state}" data-kind="${escapeHtml(section.kind)}" data-state="${section.state}">
<h2>${escapeHtml(STATE_LABELS[section.state])} · ${escapeHtml(where)} <small>${escapeHtml(STATE_HELP[section.state])}</small></h2>
${section.rows.length > 0 ? bulkActionFor(section, view, ctx) : ''}
${rows}
${more}
</section>`;
}

export function rowHtml(row: StepRow, ctx: PageContext): string {
  const s = row.step;
  const link = `${ctx.base}/step?key=${encodeURIComponent(s.encodedKey)}`;
  const cells: Array<[string, string]> = [
    ['Entity', `<a href="${escapeHtml(link)}">${escapeHtml(s.keyPath)}</a>`],
    ['State', stateBadge(s)],
    ['Step', String(s.seq)],
    ['Tries', String(s.tries)],
    ['Lease', s.holder ? `<span class="age" data-age="lease">${formatAge(s.leaseAgeMs)}</span> <span class="holder" title="${escapeHtml(s.holder)}">${escapeHtml(s.holder.slice(0, 8))}</span>` : 'free'],
    ['Last progress', timeCell(s.lastProgressAt, s.lastProgressAgeMs, 'progress')],
    ['Last error', s.errorMessage ? `<span class="error-message">${escapeHtml(s.errorMessage)}</span>` : ''],
    ...ctx.columns.map((title): [string, string] => [title, escapeHtml(row.extra[title] ?? '')]),
    ['', actionForms(s, row.actions, ctx, false)],
  ];
  return `<tr data-key="${escapeHtml(s.encodedKey)}" data-state="${s.state ?? ''}" data-stale="${s.staleLease}" data-stalled="${s.stalled}">${cells.map(([label, value]) => `<td data-label="${escapeHtml(label)}">${value}</td>`).join('')}</tr>`;
}

export function stateBadge(s: StepSummary): string {
  const marks = [
    s.staleLease ? '<span class="mark stale">stale lease</span>' : '',
    s.stalled ? '<span class="mark stalled">stalled</span>' : '',
    s.queued && !s.stalled && s.state !== 'running' ? `<span class="mark queued" title="its task was sent ${escapeHtml(formatAge(s.queued.sentAgeMs))} ago; the sweep re-sends it if it has not run by then">queued · sent <span data-queued="sends">${s.queued.sends}</span>×, <span class="age" data-age="sent">${formatAge(s.queued.sentAgeMs)}</span> ago</span>` : '',
    s.alertsOwed > 0 ? `<span class="mark owed" title="alerts claimed and not yet marked sent">${s.alertsOwed} alert${s.alertsOwed === 1 ? '' : 's'} owed</span>` : '',
  ].filter(Boolean);
  const state = s.state ?? 'none';
  const label = s.state ? STATE_LABELS[s.state] : 'No step';
  return `<span class="state ${state}">${escapeHtml(label)}</span>${marks.length > 0 ? ` ${marks.join(' ')}` : ''}`;
}

export function timeCell(at: Date | undefined, ageMs: number | undefined, name: string): string {
  if (!at) return '—';
  return `<time datetime="${at.toISOString()}" title="${at.toISOString()}"><span class="age" data-age="${name}">${formatAge(ageMs)}</span> ago</time>`;
}

export function actionForms(s: StepSummary, actions: readonly ActionName[], ctx: PageContext, big: boolean): string {
  return actions.map((action) => `<form method="post" action="${escapeHtml(`${ctx.base}/step/${action}`)}" class="action">
<input type="hidden" name="key" value="${escapeHtml(s.encodedKey)}"><input type="hidden" name="seq" value="${s.seq}"><input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">
<button type="submit" name="action" value="${action}" class="${action}${big ? ' big' : ''}" title="${escapeHtml(ACTION_HELP[action])}">${escapeHtml(ACTION_LABELS[action])}</button>
</form>`).join('');
}

const ACTION_LABELS: Record<ActionName, string> = { retry: 'Retry', resend: 'Resend', cancel: 'Cancel' };
const ACTION_HELP: Record<ActionName, string> = {
  retry: 'Run the failed step again with a fresh retry budget, on a new task',
  resend: 'Create a new task for the current step now',
  cancel: 'End the chain here: the step never runs',
};

export function code(value: string | undefined): string {
  return value ? `<code>${escapeHtml(value)}</code>` : '—';
}

function queryString(f: { kind?: string | undefined; namespace?: string | undefined; state?: string | undefined; order?: string; cursor?: string | undefined; kickoff?: string | undefined }): string {
  const params = new URLSearchParams();
  if (f.kickoff) params.set('kickoff', f.kickoff);
  if (f.state) params.set('state', f.state);
  if (f.kind) params.set('kind', f.kind);
  if (f.namespace !== undefined) params.set('namespace', f.namespace);
  if (f.order && f.order !== 'oldest') params.set('order', f.order);
  if (f.cursor) params.set('cursor', f.cursor);
  const text = params.toString();
  return text ? `?${text}` : '';
}

function jsonSafe(_name: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

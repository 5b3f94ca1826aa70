/**
 * The HTML of bulk actions: the link that asks for one, the page that shows its count and asks
 * for confirmation, an operation's row (with a progress bar) and its page. Server-rendered, no
 * script, every value escaped, no `style` attribute (the CSP allows only the page's style sheet,
 * by hash): the progress bar is an inline SVG whose `<rect>`s take `x`/`width`/`fill`
 * presentation attributes, with its numbers as text beside it. Each part is an HTML string the
 * overview can place where it wants.
 */
import { escapeHtml } from '../../http/html';
import { formatAge } from './age';
import { documentHtml } from './document';
import type { BulkAction, BulkFilter } from '../bulk/filter';
import type { OperationView } from '../bulk/view';
import { NOBODY } from '../bulk/step';
import { PAGE_SIZE, type TargetCount } from '../bulk/targets';

/** What the bulk pages need of the page they are on. */
export interface BulkPageContext {
  /** The page's title (the router's). */
  title: string;
  /** Where the router is mounted (`req.baseUrl`). */
  base: string;
  /** The CSRF token the confirm form repeats. */
  csrf: string;
}

/** The confirm page's view: what would be done, to how many, and the id the confirmation will carry. */
export interface ConfirmView {
  action: BulkAction;
  filter: BulkFilter;
  description: string;
  count: TargetCount;
  /** The operation's id, minted when the page was drawn: the same confirmation posted twice starts one operation. */
  id: string;
}

const FILTER_FIELDS = ['kind', 'namespace', 'kickoff', 'fanOut'] as const;

/** A link to the confirm page of `action` on `filter` (nothing is done by following it). */
export function bulkLink(base: string, action: BulkAction, filter: BulkFilter, label: string): string {
  const query = new URLSearchParams({ action });
  for (const name of FILTER_FIELDS) if (filter[name] !== undefined) query.set(name, filter[name]!);
  return `<a class="bulk" href="${escapeHtml(`${base}/bulk?${query.toString()}`)}">${escapeHtml(label)}</a>`;
}

/** A count as the page says it: `10,000+` when it is a lower bound. */
export function countText(count: TargetCount): string {
  return `${count.count.toLocaleString('en-US')}${count.exact ? '' : '+'}`;
}

const VERB: Record<BulkAction, string> = { retry: 'Retry', cancel: 'Cancel', resend: 'Resend' };

/** The confirm page: the count first, then a form that starts the operation. */
export function renderConfirm(view: ConfirmView, ctx: BulkPageContext): string {
  const what = view.filter.fanOut !== undefined ? 'failed children' : view.action === 'resend' ? 'stalled steps' : view.action === 'cancel' ? 'live chains' : 'failed chains';
  const hidden = [
    field('action', view.action), field('id', view.id), field('csrf', ctx.csrf),
    ...FILTER_FIELDS.filter((n) => view.filter[n] !== undefined).map((n) => field(n, view.filter[n]!)),
  ].join('');
  const form = view.count.count === 0
    ? '<p class="empty">Nothing matches now: there is nothing to do.</p>'
    : `<form method="post" action="${escapeHtml(ctx.base)}/bulk">${hidden}<button class="big${view.action === 'cancel' ? ' cancel' : ''}" type="submit">${escapeHtml(`${VERB[view.action]} ${countText(view.count)} ${what}`)}</button></form>
<p class="help">It runs as a tracked operation, ${PAGE_SIZE} at a time, each page a step of its own: it goes on if this page is closed, and after a crash it resumes without acting on any chain twice. Chains that change before their page comes are left alone and counted as skipped.</p>`;
  const body = `<h2>Confirm: ${escapeHtml(view.description)}</h2>
<p><strong>${escapeHtml(countText(view.count))}</strong> ${escapeHtml(what)} match now.</p>
${form}
<p><a href="${escapeHtml(ctx.base)}/">← back, do nothing</a></p>`;
  return shell(`Confirm · ${view.description}`, ctx, body, undefined);
}

/** An operation's progress bar: done, skipped and failed of the total, as an SVG, with the numbers as text. */
export function progressBar(op: Pick<OperationView, 'done' | 'skipped' | 'failed' | 'matched' | 'processed' | 'matchedExact'>): string {
  const total = Math.max(op.matched, op.processed, 1);
  const width = 200;
  let x = 0;
  const rects: string[] = [];
  for (const [n, fill] of [[op.done, '#0b6e2e'], [op.skipped, '#999999'], [op.failed, '#b00020']] as const) {
    const w = Math.round((n / total) * width);
    if (w > 0) rects.push(`<rect x="${x}" y="0" width="${w}" height="10" fill="${fill}"/>`);
    x += w;
  }
  const label = `${op.processed} of ${op.matched}${op.matchedExact ? '' : '+'}: ${op.done} done, ${op.skipped} skipped, ${op.failed} failed`;
  return `<svg width="${width}" height="10" viewBox="0 0 ${width} 10" role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title><rect x="0" y="0" width="${width}" height="10" fill="#eeeeee"/>${rects.join('')}</svg> <small>${escapeHtml(label)}</small>`;
}

/** The head of a table of operations. */
export const OPERATION_HEAD = '<tr><th>Operation</th><th>What</th><th>State</th><th>Progress</th><th>Age</th><th>Who</th></tr>';

/** The page of operation `id` in `namespace` (its targets'). */
export function operationPath(base: string, id: string, namespace: string | undefined): string {
  return `${base}/operation?id=${encodeURIComponent(id)}${namespace ? `&namespace=${encodeURIComponent(namespace)}` : ''}`;
}

/** One operation as a table row. */
export function operationRow(op: OperationView, base: string): string {
  const link = operationPath(base, op.id, op.filter.namespace);
  return `<tr><td data-label="Operation"><a href="${escapeHtml(link)}"><code>${escapeHtml(op.id)}</code></a></td><td data-label="What">${escapeHtml(op.description)}</td>`
    + `<td data-label="State"><span class="state ${escapeHtml(op.chain)}">${escapeHtml(op.chain)}</span></td><td data-label="Progress">${progressBar(op)}</td>`
    + `<td data-label="Age">${escapeHtml(formatAge(op.ageMs))}</td><td data-label="Who">${escapeHtml(op.by ?? '—')}</td></tr>`;
}

/** A table of operations (or a line saying there is none). */
export function operationsTable(ops: readonly OperationView[], base: string): string {
  if (ops.length === 0) return '<p class="empty">No bulk operation yet.</p>';
  return `<table class="steps operations"><thead>${OPERATION_HEAD}</thead><tbody>${ops.map((op) => operationRow(op, base)).join('')}</tbody></table>`;
}

/** The page of the newest operations. */
export function renderOperations(ops: readonly OperationView[], ctx: BulkPageContext, refreshSeconds: number): string {
  return shell('Bulk operations', ctx, `<h2>Bulk operations</h2>${operationsTable(ops, ctx.base)}`, refreshSeconds);
}

/** An operation's page: its progress, who asked and when, why targets were skipped, the errors. */
export function renderOperation(op: OperationView, ctx: BulkPageContext, refreshSeconds: number): string {
  const skips = Object.entries(op.skips).map(([why, n]) => `<li>${n} × ${escapeHtml(why)}</li>`).join('');
  const rows: Array<[string, string]> = [
    ['Id', `<code>${escapeHtml(op.id)}</code>`],
    ['What', escapeHtml(op.description)],
    ['Who', escapeHtml(op.by ?? NOBODY)],
    ['Confirmed', `${escapeHtml(formatAge(op.ageMs))} ago <small>${escapeHtml(op.createdAt.toISOString())}</small>`],
    ['State', `<span class="state ${escapeHtml(op.chain)}">${escapeHtml(op.chain)}</span>${op.stepError ? ` <span class="error-message">${escapeHtml(op.stepError)}</span>` : ''}`],
    ['Progress', progressBar(op)],
    ['Matched', `${escapeHtml(countText({ count: op.matched, exact: op.matchedExact }))} <small>when confirmed</small>`],
    ['Done', String(op.done)],
    ['Skipped', `${op.skipped}${skips ? `<ul>${skips}</ul>` : ''}`],
    ['Failed', `${op.failed}${op.errors.length > 0 ? `<ul>${op.errors.map((e) => `<li class="error-message">${escapeHtml(e)}</li>`).join('')}</ul>` : ''}`],
    ['Pages', String(op.pages)],
  ];
  if (op.finishedAt) rows.push(['Finished', escapeHtml(op.finishedAt.toISOString())]);
  const table = `<table class="detail">${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${v}</td></tr>`).join('')}</table>`;
  const body = `<h2>Operation <code>${escapeHtml(op.id)}</code></h2>${table}<p><a href="${escapeHtml(ctx.base)}/operations">All operations</a> · <a href="${escapeHtml(ctx.base)}/">← all steps</a></p>`;
  return shell(`Operation ${op.id}`, ctx, body, op.chain === 'running' ? refreshSeconds : undefined, operationPath(`${ctx.base}`, op.id, op.filter.namespace).replace('/operation?', '/operation.json?'));
}

function field(name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;
}

function shell(title: string, ctx: BulkPageContext, body: string, refreshSeconds: number | undefined, json?: string): string {
  const footer = json ? `<footer>As JSON: <a href="${escapeHtml(json)}">${escapeHtml(json)}</a></footer>` : '';
  return documentHtml({ title, siteTitle: ctx.title, base: ctx.base, refreshSeconds, body, footer });
}

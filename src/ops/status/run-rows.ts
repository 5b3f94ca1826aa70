/**
 * A kickoff's or a fan-out's row as HTML, for the status page: what it is, its age, a progress bar
 * (complete, failed, cancelled and pending of the total) and the same numbers as text, its oldest
 * pending chain, and links to its chains by state. No script and no `style=` attribute (the CSP
 * allows only the page's one style sheet): the bar is inline SVG whose `<rect>`s take `x` and
 * `width` presentation attributes, with a `<title>` and the text beside it as its fallback. Every
 * value is escaped.
 */
import { escapeHtml } from '../../http/html';
import type { FanOutRow, KickoffRow, RowProgress } from '../inspect/runs';
import { formatAge } from './age';
import { formatCount } from './counts-table';

/** The bar's width in SVG units. */
const WIDTH = 200;

/** The segments, in the order they are drawn, with their class (the page's style sheet colours them) and fill (drawn without it). */
const SEGMENTS = [
  { name: 'complete', fill: '#2e7d32' },
  { name: 'failed', fill: '#c62828' },
  { name: 'cancelled', fill: '#757575' },
  { name: 'pending', fill: '#f9a825' },
] as const;

/** The bar for `progress` as inline SVG: one `<rect>` per non-empty state, widths in proportion to the total. */
export function progressBarSvg(progress: RowProgress): string {
  const total = Math.max(progress.total, progress.started, 1);
  let x = 0;
  const rects: string[] = [];
  for (const { name, fill } of SEGMENTS) {
    const n = progress[name].count;
    if (n <= 0) continue;
    const width = Math.min(WIDTH - x, Math.round((n / total) * WIDTH * 10) / 10);
    if (width <= 0) continue;
    rects.push(`<rect class="bar-${name}" x="${x}" y="0" width="${width}" height="10" fill="${fill}"/>`);
    x += width;
  }
  const label = escapeHtml(progressText(progress));
  return `<svg class="progress" role="img" aria-label="${label}" width="${WIDTH}" height="10" viewBox="0 0 ${WIDTH} 10">` +
    `<title>${label}</title><rect class="bar-total" x="0" y="0" width="${WIDTH}" height="10" fill="#e0e0e0"/>${rects.join('')}</svg>`;
}

/** The progress as text: `complete 120 · failed 3 · cancelled 0 · pending 177 of 300`. */
export function progressText(p: RowProgress): string {
  return `complete ${formatCount(p.complete)} · failed ${formatCount(p.failed)} · cancelled ${formatCount(p.cancelled)} · pending ${formatCount(p.pending)} of ${p.total.toLocaleString('en-US')}`;
}

/** A kickoff's row (`<tr>`); `base` is the router's mount path. */
export function kickoffRowHtml(row: KickoffRow, base: string): string {
  const what = `<a href="${escapeHtml(`${base}/kickoff?id=${encodeURIComponent(row.kickoffId)}`)}">${escapeHtml(row.kickoffId)}</a>`;
  const kinds = row.kinds.map((k) => `${k.kind}${k.namespace ? ` (${k.namespace})` : ''}`).join(', ');
  const links = stateLinks(`${base}/kickoff-run.json?id=${encodeURIComponent(row.kickoffId)}`, row.progress);
  return rowHtml('kickoff', what, `${row.state}${row.calls > 1 ? ` · ${row.calls} calls` : ''}`, kinds, row.ageMs, row.progress, row.oldestPending, base, links);
}

/** A fan-out's row (`<tr>`), its parent linked; `base` is the router's mount path. */
export function fanOutRowHtml(row: FanOutRow, base: string): string {
  const namespace = row.parent.key.namespace ?? '';
  const self = `${base}/fanout.json?id=${encodeURIComponent(row.id)}${namespace ? `&namespace=${encodeURIComponent(namespace)}` : ''}`;
  const parent = `<a href="${escapeHtml(`${base}/step?key=${encodeURIComponent(row.parent.encodedKey)}`)}">${escapeHtml(row.parent.keyPath)}</a>`;
  const what = `<a href="${escapeHtml(self)}">${escapeHtml(row.id)}</a> of ${parent} step ${row.seq}`;
  const state = `${row.state}${row.outcome !== undefined ? ` · joined: ${row.outcome}` : ''}`;
  return rowHtml('fanout', what, state, row.kinds.join(', '), row.ageMs, row.progress, row.oldestPending, base, stateLinks(self, row.progress));
}

function rowHtml(
  type: string, what: string, state: string, kinds: string, ageMs: number, progress: RowProgress,
  oldest: KickoffRow['oldestPending'], base: string, links: string,
): string {
  const oldestCell = oldest
    ? `<a href="${escapeHtml(`${base}/step?key=${encodeURIComponent(oldest.encodedKey)}`)}">${escapeHtml(oldest.keyPath)}</a> ${escapeHtml(formatAge(oldest.ageMs))}`
    : '—';
  return `<tr class="run-row run-${type}"><td>${what}</td><td>${escapeHtml(state)}</td><td>${escapeHtml(kinds)}</td>` +
    `<td>${escapeHtml(formatAge(ageMs))}</td><td>${progressBarSvg(progress)}<br><span class="progress-text">${escapeHtml(progressText(progress))}</span></td>` +
    `<td>${oldestCell}</td><td>${links}</td></tr>`;
}

/** Links to the run's chains in each state that has some (the JSON lists them a page at a time). */
function stateLinks(self: string, p: RowProgress): string {
  const states = [['failed', p.failed.count], ['scheduled', p.pending.count], ['complete', p.complete.count], ['cancelled', p.cancelled.count]] as const;
  return states.filter(([, n]) => n > 0).map(([state]) => `<a href="${escapeHtml(`${self}&state=${state}`)}">${state}</a>`).join(' ');
}

/**
 * The detail page's history of a chain: the last steps the lock keeps (`lock_hist`), newest first,
 * one row each (step, route, when its last attempt began, how long it took, attempts, outcome,
 * takeover). Server-rendered, every value escaped, no script.
 */
import { escapeHtml } from '../../http/html';
import { HISTORY_STEPS, type HistoryEntry } from '../../rules/step-history';
import { formatAge } from './age';

/** What each outcome means, as the table's cells say it. */
const OUTCOME_LABELS: Record<HistoryEntry['outcome'], string> = {
  running: 'running or waiting for a retry',
  next: 'scheduled the next step',
  complete: 'completed the chain',
  failed: 'failed for good',
  cancelled: 'cancelled',
};

/** The history section, or a line saying there is none (an entity written before `lock_hist`, or by the Go library). */
export function historyHtml(history: readonly HistoryEntry[], now: number): string {
  if (history.length === 0) return '<h2>History</h2>\n<p class="help">No history on this entity yet: it is written as steps end.</p>';
  const rows = history.map((e) => `<tr data-seq="${e.seq}" data-outcome="${e.outcome}">`
    + `<td>${e.seq}</td>`
    + `<td>${e.route ? `<code>${escapeHtml(e.route)}</code>` : '—'}</td>`
    + `<td>${e.startedAt ? `<time datetime="${e.startedAt.toISOString()}" title="${e.startedAt.toISOString()}">${formatAge(Math.max(0, now - e.startedAt.getTime()))} ago</time>` : '—'}</td>`
    + `<td>${e.tookMs !== undefined ? formatAge(e.tookMs) : '—'}</td>`
    + `<td>${e.attempts}</td>`
    + `<td><span class="state ${e.outcome}">${escapeHtml(OUTCOME_LABELS[e.outcome])}</span></td>`
    + `<td>${e.takeover ? '<span class="mark stale">takeover</span>' : ''}</td></tr>`);
  return `<h2>History</h2>
<table class="history">
<caption>The chain's last ${HISTORY_STEPS} steps at most, newest first, as the lock keeps them</caption>
<thead><tr><th scope="col">Step</th><th scope="col">Route</th><th scope="col">Last attempt began</th><th scope="col">Took</th><th scope="col">Attempts</th><th scope="col">Outcome</th><th scope="col">Takeover</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
}

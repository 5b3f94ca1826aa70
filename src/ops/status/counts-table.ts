/**
 * The overview's numbers: one row per kind (and namespace, when the page lists several), one column
 * per count, each a link to the list it counts. A count the store could only bound reads "10,000+".
 * Server-rendered, escaped, no script.
 */
import { escapeHtml } from '../../http/html';
import type { KindCounts } from '../inspect/inspector';
import type { LockCount } from '../../types';

/** A column: which count, its heading, what it counts, and the list it links to. */
interface Column {
  name: 'failed' | 'live' | 'waitingLong' | 'complete' | 'cancelled';
  label: string;
  help: string;
  /** The list's `state` filter; none: the kind's overview. */
  state?: string;
  attention: boolean;
}

/** What needs a person first. */
const COLUMNS: readonly Column[] = [
  { name: 'failed', label: 'Failed', help: 'failed for good: retry, or leave them', state: 'failed', attention: true },
  { name: 'waitingLong', label: 'No progress ≥ stallAfter', help: 'live steps that have not moved for stallAfter: stalled, or queued behind a backlog (the stalled list tells them apart by the last send)', state: 'stalled', attention: true },
  { name: 'live', label: 'Live', help: 'steps scheduled: waiting for their task, or running', attention: false },
  { name: 'complete', label: 'Complete', help: 'chains finished', state: 'complete', attention: false },
  { name: 'cancelled', label: 'Cancelled', help: 'chains an operator cancelled', state: 'cancelled', attention: false },
];

/** A count as the page writes it: `1,234`, or `10,000+` when bounded. */
export function formatCount(count: LockCount): string {
  return `${count.count.toLocaleString('en-US')}${count.exact ? '' : '+'}`;
}

/** The table, or nothing when there is no count. */
export function countsTableHtml(rows: readonly KindCounts[], base: string, showNamespace: boolean): string {
  if (rows.length === 0) return '';
  const head = `<tr><th>Kind</th>${showNamespace ? '<th>Namespace</th>' : ''}${COLUMNS.map((c) => `<th title="${escapeHtml(c.help)}">${escapeHtml(c.label)}</th>`).join('')}</tr>`;
  const body = rows.map((row) => {
    const tds = COLUMNS.map((c) => {
      const count = row[c.name];
      const params = new URLSearchParams({ ...(c.state ? { state: c.state } : {}), kind: row.kind, namespace: row.namespace });
      const attention = c.attention && count.count > 0 ? ' attention' : '';
      return `<td data-label="${escapeHtml(c.label)}"><a class="count${attention}" data-count="${c.name}" data-exact="${count.exact}" href="${escapeHtml(`${base}/?${params.toString()}`)}">${formatCount(count)}</a></td>`;
    });
    return `<tr data-kind="${escapeHtml(row.kind)}" data-namespace="${escapeHtml(row.namespace)}"><th>${escapeHtml(row.kind)}</th>${showNamespace ? `<td>${escapeHtml(row.namespace || '(default)')}</td>` : ''}${tds.join('')}</tr>`;
  });
  return `<section class="counts" aria-label="Counts per kind">
<table class="counts">
<thead>${head}</thead>
<tbody>
${body.join('\n')}
</tbody>
</table>
</section>`;
}

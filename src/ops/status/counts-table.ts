/**
 * The overview's numbers: one row per kind (and namespace, when the page lists several), one column
 * per state, each count a link to that filtered list. A count the store could only bound reads
 * "10,000+". Server-rendered, escaped, no script.
 */
import { escapeHtml } from '../../http/html';
import type { InspectState } from '../inspect/step-view';

/** One count of the table. */
export interface CountCell {
  kind: string;
  namespace: string;
  state: InspectState;
  count: number;
  /** False when the store counted up to a cap: "at least `count`". */
  exact: boolean;
}

/** The states as the table's columns, what needs a person first. */
const COLUMNS: readonly InspectState[] = ['failed', 'stalled', 'stale', 'running', 'scheduled', 'complete', 'cancelled'];
const LABELS: Record<InspectState, string> = {
  failed: 'Failed', stalled: 'Stalled', stale: 'Stale lease', running: 'Running', scheduled: 'Scheduled', complete: 'Complete', cancelled: 'Cancelled',
};
/** What a column counts, where its count is not the list's (a count cannot read ledger records). */
const COLUMN_HELP: Partial<Record<InspectState, string>> = {
  stalled: 'no progress for stallAfter; its list leaves out those whose task was re-sent within it (queued)',
};

/** A count as the page writes it: `1,234`, or `10,000+` when bounded. */
export function formatCount(count: number, exact: boolean): string {
  return `${count.toLocaleString('en-US')}${exact ? '' : '+'}`;
}

/** The table, or nothing when there is no count. */
export function countsTableHtml(cells: readonly CountCell[], base: string, showNamespace: boolean): string {
  if (cells.length === 0) return '';
  const rows = new Map<string, { kind: string; namespace: string; byState: Map<InspectState, CountCell> }>();
  for (const cell of cells) {
    const id = `${cell.kind}\u0000${cell.namespace}`;
    if (!rows.has(id)) rows.set(id, { kind: cell.kind, namespace: cell.namespace, byState: new Map() });
    rows.get(id)!.byState.set(cell.state, cell);
  }
  const columns = COLUMNS.filter((state) => cells.some((c) => c.state === state));
  const head = `<tr><th>Kind</th>${showNamespace ? '<th>Namespace</th>' : ''}${columns.map((s) => `<th class="state ${s}"${COLUMN_HELP[s] ? ` title="${escapeHtml(COLUMN_HELP[s]!)}"` : ''}>${escapeHtml(LABELS[s])}</th>`).join('')}</tr>`;
  const body = [...rows.values()].map((row) => {
    const tds = columns.map((state) => {
      const cell = row.byState.get(state);
      if (!cell) return '<td>—</td>';
      const link = `${base}/?${new URLSearchParams({ state, kind: row.kind, namespace: row.namespace }).toString()}`;
      const text = formatCount(cell.count, cell.exact);
      const attention = (state === 'failed' || state === 'stalled') && cell.count > 0 ? ' attention' : '';
      return `<td data-label="${escapeHtml(LABELS[state])}"><a class="count${attention}" data-count="${state}" data-exact="${cell.exact}" href="${escapeHtml(link)}">${text}</a></td>`;
    });
    return `<tr data-kind="${escapeHtml(row.kind)}"><th>${escapeHtml(row.kind)}</th>${showNamespace ? `<td>${escapeHtml(row.namespace || '(default)')}</td>` : ''}${tds.join('')}</tr>`;
  });
  return `<section class="counts" aria-label="Counts per kind and state">
<table class="counts">
<thead>${head}</thead>
<tbody>
${body.join('\n')}
</tbody>
</table>
</section>`;
}

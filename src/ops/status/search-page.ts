/**
 * The status page's search answer: every entity the text matched, as the lists show steps, with
 * how it matched (key, encoded key or chain id). One match is not drawn here: the router sends the
 * operator straight to its detail page.
 */
import { escapeHtml } from '../../http/html';
import { layout, rowHtml, type PageContext } from './page';
import { actionsFor, type SearchView } from './view-model';

/** The page of a search's matches (none, or more than one). */
export function renderSearch(view: SearchView, ctx: PageContext): string {
  const head = ['Entity', 'State', 'Step', 'Tries', 'Lease', 'Last progress', 'Last error', 'Matched by', ''];
  const rows = view.hits.map((h) => rowHtml({ step: h.step, extra: { 'Matched by': h.by }, actions: actionsFor(h.step) }, { ...ctx, columns: ['Matched by'] }));
  const found = view.hits.length === 0
    ? `<p class="empty">Nothing matched <code>${escapeHtml(view.text)}</code>. A key is written as the page shows it, e.g. <code>Counter:"counters-12"</code> or <code>Order:42/Line:"a"</code> (names in double quotes, ids bare); a chain id as the detail page shows it.</p>`
    : `<table class="steps">
<thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
  const kickoff = view.kickoff === undefined ? '' : `<p class="kickoff-found">A kickoff: <a href="${escapeHtml(`${ctx.base}/kickoff?id=${encodeURIComponent(view.kickoff)}`)}">${escapeHtml(view.kickoff)} →</a></p>`;
  const body = `<p><a href="${escapeHtml(ctx.base)}/">← all steps</a></p>
<h2>Search: <code>${escapeHtml(view.text)}</code> <small><span data-count="found">${view.hits.length}</span> found</small></h2>
${kickoff}
${view.hits.length === 0 && kickoff !== '' ? '' : found}`;
  return layout(`Search · ${ctx.title}`, ctx, body, `${ctx.base}/search.json?q=${encodeURIComponent(view.text)}`);
}

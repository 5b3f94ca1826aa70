/**
 * A bulk kickoff's page on the status router (`GET /kickoff?id=`): its chains by state, with a
 * progress bar (inline SVG: its rectangles take `x` and `width` attributes, which the CSP allows, as
 * it allows no `style` attribute), each count a link to that state's list of the kickoff's chains.
 * It reloads itself like every page, so the bar fills as the chains run.
 */
import { escapeHtml } from '../../http/html';
import type { RunProgress } from '../inspect/inspector';
import { formatCount } from './counts-table';
import { layout, type PageContext } from './page';

/** The parts of the bar, in the order drawn, with their colours and list filters. */
const PARTS = [
  { name: 'complete', label: 'complete', fill: '#2e7d32', state: 'complete' },
  { name: 'failed', label: 'failed', fill: '#b00020', state: 'failed' },
  { name: 'cancelled', label: 'cancelled', fill: '#777', state: 'cancelled' },
  { name: 'live', label: 'live (scheduled or running)', fill: '#90a4ae', state: undefined },
] as const;

/** The bar: one rectangle per part, widths in proportion (a 400-unit wide SVG, scaled to its box). */
export function progressBar(p: RunProgress): string {
  const total = p.started.count;
  let x = 0;
  const rects = PARTS.map((part) => {
    const n = p[part.name].count;
    const width = total === 0 ? 0 : Math.round((n / total) * 400 * 100) / 100;
    const rect = `<rect x="${x}" y="0" width="${width}" height="16" fill="${part.fill}"><title>${escapeHtml(`${formatCount(p[part.name])} ${part.label}`)}</title></rect>`;
    x += width;
    return rect;
  });
  const summary = `${formatCount(p.complete)} complete, ${formatCount(p.failed)} failed, ${formatCount(p.cancelled)} cancelled, ${formatCount(p.live)} live, of ${formatCount(p.started)}`;
  return `<svg class="progress" viewBox="0 0 400 16" width="400" height="16" role="img" aria-label="${escapeHtml(summary)}" preserveAspectRatio="none"><rect x="0" y="0" width="400" height="16" fill="#eceff1"></rect>${rects.join('')}</svg>`;
}

/** The kickoff's page. */
export function renderKickoff(p: RunProgress, kinds: readonly string[], ctx: PageContext): string {
  const link = (state: string | undefined, kind: string): string => `${ctx.base}/?${new URLSearchParams({ ...(state ? { state } : {}), kind, kickoff: p.id }).toString()}`;
  const counts = PARTS.map((part) => `<li><span data-count="${part.name}">${formatCount(p[part.name])}</span> ${escapeHtml(part.label)}${kinds.map((k) => ` <a href="${escapeHtml(link(part.state, k))}">${escapeHtml(k)} →</a>`).join('')}</li>`).join('\n');
  const body = `<p><a href="${escapeHtml(ctx.base)}/">← all steps</a></p>
<h2>Kickoff <code>${escapeHtml(p.id)}</code> <small><span data-count="started">${formatCount(p.started)}</span> chains started</small></h2>
<div class="kickoff" data-kickoff="${escapeHtml(p.id)}">
${progressBar(p)}
<ul class="run-counts">
${counts}
</ul>
<p class="help">Counted through the chains' <code>lock_run</code> (<code>${escapeHtml(p.run)}</code>): a chain counts while its entity still runs it; an entity a later chain took over counts no more.</p>
</div>`;
  return layout(`Kickoff ${p.id} · ${ctx.title}`, ctx, body, `${ctx.base}/kickoff.json?id=${encodeURIComponent(p.id)}`);
}

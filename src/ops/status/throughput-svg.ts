/**
 * The picture of the overview: steps finished per minute (bars, failed ones darker at their foot)
 * with the p50 and p95 of how long they took (lines, on the right-hand scale), over the window of
 * `inspector.throughput()`. Pure and server-rendered: an inline `<svg>` with presentation
 * attributes only (the page's CSP allows no script and no `style` attribute), axis labels, a
 * `<title>` and `<desc>`, and a text summary beside it for screen readers. Every text escaped.
 */
import { escapeHtml } from '../../http/html';
import type { Throughput } from '../inspect/throughput';
import { formatAge } from './age';

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 48;
const RIGHT = 64;
const TOP = 16;
const BOTTOM = 40;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;

/** What a cut means, in the summary. */
const CUT_TEXT: Record<Throughput['cut'][number], string> = {
  entities: 'more entities moved than the picture reads per kind and state (the cap): counts are at least these',
  history: 'some chains finished more steps than their lock keeps: their older steps are not counted',
};

/** The figure: the SVG and its summary in words. */
export function throughputFigure(t: Throughput): string {
  return `<figure class="throughput">
${throughputSvg(t)}
<figcaption>${escapeHtml(summary(t))}</figcaption>
</figure>`;
}

/** The summary a screen reader reads (also the SVG's `<desc>`). */
export function summary(t: Throughput): string {
  const minutes = t.buckets.length;
  const busiest = t.buckets.reduce((best, b) => (b.finished > best.finished ? b : best), t.buckets[0]!);
  const parts = [`${t.finished.toLocaleString('en-US')} steps finished in the last ${minutes} minutes`];
  if (t.finished > 0) {
    parts.push(`busiest minute ${clock(busiest.at)} UTC with ${busiest.finished}`);
    parts.push(`p50 ${formatAge(t.p50Ms)}, p95 ${formatAge(t.p95Ms)}`);
  }
  const failed = t.buckets.reduce((n, b) => n + b.failed, 0);
  if (failed > 0) parts.push(`${failed} failed for good`);
  for (const cut of t.cut) parts.push(`cut: ${CUT_TEXT[cut]}`);
  return `${parts.join('; ')}.`;
}

/** The chart alone. */
export function throughputSvg(t: Throughput): string {
  const n = Math.max(1, t.buckets.length);
  const maxCount = niceMax(Math.max(1, ...t.buckets.map((b) => b.finished)));
  const maxMs = niceMax(Math.max(1, ...t.buckets.map((b) => b.p95Ms ?? 0)));
  const slot = PLOT_W / n;
  const x = (i: number): number => LEFT + i * slot;
  const yCount = (v: number): number => TOP + PLOT_H - (v / maxCount) * PLOT_H;
  const yMs = (v: number): number => TOP + PLOT_H - (v / maxMs) * PLOT_H;
  const bars = t.buckets.map((b, i) => {
    if (b.finished === 0) return '';
    const w = fixed(Math.max(1, slot - 1));
    const all = `<rect x="${fixed(x(i))}" y="${fixed(yCount(b.finished))}" width="${w}" height="${fixed(PLOT_H - (yCount(b.finished) - TOP))}" fill="#9cc3e6"><title>${escapeHtml(`${clock(b.at)}: ${b.finished} finished${b.failed ? `, ${b.failed} failed` : ''}`)}</title></rect>`;
    const failed = b.failed > 0 ? `<rect x="${fixed(x(i))}" y="${fixed(yCount(b.failed))}" width="${w}" height="${fixed(PLOT_H - (yCount(b.failed) - TOP))}" fill="#c0392b"/>` : '';
    return all + failed;
  }).join('');
  const line = (pick: 'p50Ms' | 'p95Ms'): string => t.buckets
    .map((b, i) => (b[pick] === undefined ? undefined : `${fixed(x(i) + slot / 2)},${fixed(yMs(b[pick]!))}`))
    .filter((p): p is string => p !== undefined).join(' ');
  const p50 = line('p50Ms');
  const p95 = line('p95Ms');
  const bottom = TOP + PLOT_H;
  const ticks = [0, Math.floor((n - 1) / 2), n - 1].filter((v, i, a) => a.indexOf(v) === i);
  const xLabels = ticks.map((i) => `<text x="${fixed(x(i) + slot / 2)}" y="${bottom + 16}" text-anchor="middle" font-size="11" fill="#333">${escapeHtml(clock(t.buckets[i]?.at ?? t.since))}</text>`).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" class="throughput" role="img" aria-labelledby="throughput-title throughput-desc" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}">
<title id="throughput-title">Steps finished per minute, with p50 and p95 step duration</title>
<desc id="throughput-desc">${escapeHtml(summary(t))}</desc>
<rect x="${LEFT}" y="${TOP}" width="${PLOT_W}" height="${PLOT_H}" fill="#fafafa" stroke="#ccc"/>
${bars}
${p95 ? `<polyline points="${p95}" fill="none" stroke="#e67e22" stroke-width="1.5"/>` : ''}
${p50 ? `<polyline points="${p50}" fill="none" stroke="#2c3e50" stroke-width="1.5"/>` : ''}
<text x="${LEFT - 4}" y="${TOP + 4}" text-anchor="end" font-size="11" fill="#333">${maxCount}</text>
<text x="${LEFT - 4}" y="${bottom}" text-anchor="end" font-size="11" fill="#333">0</text>
<text x="12" y="${TOP + PLOT_H / 2}" text-anchor="middle" font-size="11" fill="#333" transform="rotate(-90 12 ${TOP + PLOT_H / 2})">steps / min</text>
<text x="${LEFT + PLOT_W + 4}" y="${TOP + 4}" font-size="11" fill="#333">${escapeHtml(formatAge(maxMs))}</text>
<text x="${LEFT + PLOT_W + 4}" y="${bottom}" font-size="11" fill="#333">0</text>
${xLabels}
<text x="${LEFT}" y="${HEIGHT - 6}" font-size="11" fill="#333">minute (UTC) · bars: finished (red: failed) · <tspan fill="#2c3e50">p50</tspan> / <tspan fill="#e67e22">p95</tspan> duration${t.cut.length > 0 ? ' · cut: see the summary' : ''}</text>
</svg>`;
}

/** `HH:MM` of `at`, UTC. */
function clock(at: Date): string {
  return at.toISOString().slice(11, 16);
}

/** A round number at or above `v` (1, 2 or 5 times a power of ten), for an axis's top. */
export function niceMax(v: number): number {
  const power = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 5, 10]) if (step * power >= v) return step * power;
  return 10 * power;
}

function fixed(v: number): string {
  return String(Math.round(v * 10) / 10);
}

/**
 * The status page: server-rendered HTML, no build step. Every value is escaped. A tiny inline
 * script refreshes the chain table every 1.5 s (without JavaScript a meta refresh does).
 */
import { escapeHtml } from '../src/html';
import type { ChainStatus, Status, StepStatus } from './status';

/** How often the page refreshes its table, ms. */
export const REFRESH_MS = 1_500;

/** The whole page. */
export function renderPage(status: Status): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>datastore-locker example</title>
<noscript><meta http-equiv="refresh" content="2"></noscript>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>datastore-locker example</h1>
  <p>Each chain below is a series of Cloud Tasks steps on one Datastore entity. The Locker holds a lease on the
  entity while a step runs, so each step runs once: the counts are the times each step's side effect ran.
  On purpose, a counter's step 6 is delivered a second time (the duplicate is dropped) and every order's first
  charge fails (the step is retried).</p>
  <div class="actions">
    <form method="post" action="/start/counter"><button type="submit">Start a counter chain</button></form>
    <form method="post" action="/start/order"><button type="submit">Start an order chain</button></form>
  </div>
</header>
${renderChains(status)}
<footer>The same data as JSON: <a href="/status.json">/status.json</a>. <code>POST /sweep</code> re-sends tasks
committed but never created (for Cloud Scheduler).</footer>
<script>${REFRESH_SCRIPT}</script>
</body>
</html>
`;
}

/** The part of the page that refreshes: a summary and one row per chain. */
export function renderChains(status: Status): string {
  const rows = status.chains.map(renderChain).join('\n');
  const body = status.chains.length === 0
    ? '<p class="empty">No chains yet: start one above.</p>'
    : `<table>
  <thead><tr><th>Chain</th><th>State</th><th title="The current step: one past the last once the chain is complete">lock_seq</th><th>Lease holder</th><th>Retries</th><th>Last error</th><th>Steps: times each side effect ran</th></tr></thead>
  <tbody>
${rows}
  </tbody>
</table>`;
  return `<main id="chains">
<p class="summary">${escapeHtml(summary(status))}</p>
${body}
</main>`;
}

function summary(status: Status): string {
  const counts = new Map<string, number>();
  for (const chain of status.chains) counts.set(chain.state, (counts.get(chain.state) ?? 0) + 1);
  const parts = [...counts].map(([state, n]) => `${n} ${state}`);
  const n = status.chains.length;
  return `${n} chain${n === 1 ? '' : 's'}${parts.length > 0 ? `: ${parts.join(', ')}` : ''}.`;
}

function renderChain(chain: ChainStatus): string {
  return `    <tr class="chain" data-key="${escapeHtml(chain.key)}" data-kind="${escapeHtml(chain.kind)}" data-state="${escapeHtml(chain.state)}">
      <td class="key"><code>${escapeHtml(chain.key)}</code></td>
      <td><span class="state ${escapeHtml(chain.state)}">${escapeHtml(chain.state)}</span></td>
      <td class="num">${escapeHtml(chain.seq)}</td>
      <td class="holder">${chain.holder ? `<code title="${escapeHtml(chain.holder)}">${escapeHtml(chain.holder.slice(0, 8))}</code>` : NONE}</td>
      <td class="num">${escapeHtml(chain.retries)}</td>
      <td class="error">${chain.lastError ? escapeHtml(chain.lastError) : NONE}</td>
      <td class="steps">${chain.steps.map(renderStep).join(' ')}</td>
    </tr>`;
}

const NONE = '<span class="none">—</span>';

function renderStep(step: StepStatus): string {
  const verb = step.effect.split(' ')[0] ?? '';
  const notes: string[] = [];
  if (step.attempts > step.runs) notes.push(`${step.attempts} attempts`);
  if (step.dropped > 0) notes.push(`${step.dropped} duplicate${step.dropped === 1 ? '' : 's'} dropped`);
  const health = step.runs === 1 ? 'once' : step.runs === 0 ? 'none' : 'many';
  const title = `step ${step.seq}: ${step.effect} ran ${step.runs}×, ${step.attempts} attempt(s), ${step.dropped} duplicate(s) dropped`;
  return `<span class="step ${health}" data-seq="${escapeHtml(step.seq)}" data-runs="${escapeHtml(step.runs)}" title="${escapeHtml(title)}">`
    + `<b>${escapeHtml(step.seq)}</b> ${escapeHtml(verb)} ×${escapeHtml(step.runs)}`
    + `${notes.length > 0 ? ` <small>(${escapeHtml(notes.join(', '))})</small>` : ''}</span>`;
}

/** Replaces the chain table with a fresh one (not while the tab is hidden); forms and scroll position stay. */
const REFRESH_SCRIPT = `
setInterval(async () => {
  if (document.hidden) return;
  try {
    const response = await fetch('/', { cache: 'no-store' });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById('chains');
    const current = document.getElementById('chains');
    if (fresh && current) current.replaceWith(fresh);
  } catch { /* the app is restarting: try again next time */ }
}, ${REFRESH_MS});
`;

const STYLE = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1d232a; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
header p { max-width: 48rem; color: #4a5560; }
.actions { display: flex; gap: .75rem; margin: 1rem 0 1.5rem; }
button { font: inherit; padding: .45rem 1rem; border: 1px solid #1a5fb4; background: #1a5fb4; color: #fff; border-radius: 6px; cursor: pointer; }
button:hover { background: #134a8e; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #e3e7eb; vertical-align: top; }
th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: #5f6b76; }
td.num { text-align: right; }
td.key { white-space: nowrap; }
td.error { color: #a51d2d; max-width: 16rem; }
.none { color: #9aa4ad; }
code { font: .85rem ui-monospace, monospace; }
.state { display: inline-block; padding: .05rem .5rem; border-radius: 99px; font-size: .85rem; }
.state.complete { background: #dff3e4; color: #1e6b34; }
.state.running { background: #fff1c2; color: #7a5900; }
.state.scheduled { background: #e3edfb; color: #1a5fb4; }
.state.failed { background: #fbe0e2; color: #a51d2d; }
.step { display: inline-block; margin: 0 .25rem .25rem 0; padding: .05rem .45rem; border-radius: 4px; font-size: .85rem; background: #eef1f4; white-space: nowrap; }
.step.once { background: #dff3e4; }
.step.many { background: #fbe0e2; }
.step small { color: #5f6b76; }
.summary { color: #4a5560; }
footer { margin-top: 2rem; color: #5f6b76; font-size: .85rem; }
`;

/**
 * The status router's one style sheet, shared by its pages: inline in each page, and allowed by the
 * Content-Security-Policy by its hash (`headers.ts`), so no page loads or inlines any other.
 */
/** The page's one style sheet, inline: the Content-Security-Policy allows it by its hash (`headers.ts`). */
export const STYLE = `
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 80rem; padding: 0.5rem 1rem; color: #1b1b1b; }
header h1 { font-size: 1.3rem; margin: 0.3rem 0; } header h1 a { color: inherit; text-decoration: none; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 0.4rem; } h2 small { font-weight: normal; color: #666; font-size: 0.8rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { text-align: left; padding: 0.3rem 0.4rem; border-bottom: 1px solid #ddd; vertical-align: top; }
table.detail th { width: 10rem; }
.state { font-weight: 600; } .state.failed { color: #b00020; } .state.stalled, .state.stale { color: #a15c00; }
.state.running { color: #0b6e2e; } .state.complete, .state.cancelled { color: #555; }
.state.schedule-active { color: #0b6e2e; } .state.schedule-paused { color: #a15c00; } .state.schedule-removed { color: #555; }
.mark { display: inline-block; font-size: 0.75rem; padding: 0 0.35rem; border-radius: 0.6rem; color: #fff; }
.mark.stale { background: #c77700; } .mark.stalled { background: #b00020; }
.mark.queued { background: #456; } .mark.owed { background: #6a1b9a; }
section.counts, section.runs, section.operations, section.schedules, figure.throughput { overflow-x: auto; max-width: 100%; } figure.throughput { margin: 0.8rem 0; } figure.throughput svg { max-width: 100%; height: auto; } table.counts { width: auto; } table.counts td, table.counts th { text-align: right; } table.counts tbody th { text-align: left; }
a.count { font-variant-numeric: tabular-nums; } a.count.attention { color: #b00020; font-weight: 600; }
.error-message { color: #b00020; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 0.5rem; font-size: 0.8rem; }
form.action { display: inline; } button { margin: 0.1rem; padding: 0.2rem 0.6rem; }
button.big { font-size: 1rem; padding: 0.4rem 1rem; } button.cancel { color: #b00020; }
header { display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; align-items: center; justify-content: space-between; }
.search input { max-width: 60vw; }
.filters { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 0.5rem 0; }
.done { background: #e7f5ea; padding: 0.5rem; } .empty, .help, footer { color: #666; font-size: 0.85rem; }
code { font-size: 0.85em; overflow-wrap: anywhere; }
@media (max-width: 40rem) {
  table.steps thead { display: none; }
  table.steps tr { display: block; border: 1px solid #ddd; border-radius: 0.4rem; margin: 0.5rem 0; padding: 0.3rem; }
  table.steps td { display: flex; gap: 0.5rem; border: 0; padding: 0.15rem 0.3rem; }
  table.steps td::before { content: attr(data-label); flex: 0 0 6.5rem; color: #666; }
  table.detail th { width: 7rem; }
}
`;

/**
 * The example's words above the library's status page: what the demo does, and the buttons that
 * start chains (local runs, or operators on a deployed app). Server-rendered, no script: the
 * status router's page reloads itself.
 */

/** How often the status page reloads itself, seconds. */
export const REFRESH_SECONDS = 2;

/** The HTML above the lists: static text and two forms. */
export function renderIntro(): string {
  return `<section class="intro">
<p>Each chain below is a series of Cloud Tasks steps on one Datastore entity. The Locker holds a lease on the
entity while a step runs, so each step runs once: the side-effect column counts the times each step's side
effect ran. On purpose, a counter's step 6 is delivered a second time (the duplicate is dropped) and every
order's first charge fails (the step is retried). The orders of the "declined" button fail for good: they wait
under Failed until you retry them, one by one or all at once, and then their charge goes through. An order with line items fans out: each line item is a chain
of its own, and once every one has settled the order's next step joins them into one invoice (open the order to
see the fan-out's counts and the invoice). A schedule, <code>heartbeat-report</code>, starts a one-step chain every
minute from the sweep's ticks: the Schedules section shows its next and last run, and pauses, resumes or runs it now.</p>
<div class="start">
  <form method="post" action="/start/counter"><button type="submit">Start a counter chain</button></form>
  <form method="post" action="/start/order"><button type="submit">Start an order chain</button></form>
  <form method="post" action="/start/line-order"><button type="submit">Start an order with line items (fan-out)</button></form>
  <form method="post" action="/start/counters"><button type="submit">Start 1,000 counter chains at once</button></form>
  <form method="post" action="/start/declined-orders"><button type="submit">Start 100 orders whose card is declined for good</button></form>
</div>
<p class="help">The same data as JSON: <a href="/status.json">/status.json</a>. <code>POST /sweep</code> re-delivers
stalled steps (for Cloud Scheduler); locally the app sweeps every few seconds, and <code>POST /local/sweep</code> runs one by hand.</p>
</section>`;
}

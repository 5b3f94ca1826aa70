// Steps per minute and their p50/p95 from hand-built histories (src/ops/inspect/throughput.ts), and
// the SVG drawn from them (src/ops/status/throughput-svg.ts): pure, no store.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bucketsOf, endedSteps, overall, percentile, type Throughput } from '../../src/ops/inspect/throughput';
import { closed, opened, HISTORY_STEPS } from '../../src/rules/step-history';
import { throughputFigure, throughputSvg } from '../../src/ops/status/throughput-svg';

const SINCE = Date.parse('2026-03-01T10:00:00Z');
const NOW = SINCE + 60 * 60_000;

/** A history of steps that each ran `took` ms and ended at `ends` (ms after SINCE). */
function history(steps: Array<{ ends: number; took: number; outcome?: 'next' | 'complete' | 'failed' }>): string {
  let hist = '';
  steps.forEach((s, i) => {
    hist = opened(hist, { seq: i + 1, route: '/s', now: new Date(SINCE + s.ends - s.took), takeover: false });
    hist = closed(hist, { seq: i + 1, outcome: s.outcome ?? 'next', now: new Date(SINCE + s.ends), attempts: 1 });
  });
  return hist;
}

describe('throughput from the chains\' histories', () => {
  it('nearest-rank percentiles', () => {
    const sorted = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    assert.equal(percentile(sorted, 50), 50);
    assert.equal(percentile(sorted, 95), 100);
    assert.equal(percentile([7], 95), 7);
    assert.equal(percentile([1, 2, 3], 50), 2);
  });

  it('buckets a hand-built history by the minute each step ended, with p50 and p95 of how long it took', () => {
    const a = endedSteps(history([{ ends: 10_000, took: 100 }, { ends: 20_000, took: 300 }, { ends: 70_000, took: 50, outcome: 'failed' }]), SINCE, NOW, HISTORY_STEPS);
    const b = endedSteps(history([{ ends: 30_000, took: 200 }, { ends: 59_999, took: 1_000 }, { ends: -5_000, took: 10 }]), SINCE, NOW, HISTORY_STEPS);
    const steps = [...a.steps, ...b.steps];
    assert.equal(steps.length, 5, 'the step that ended before the window is left out');
    const buckets = bucketsOf(steps, SINCE, NOW);
    assert.equal(buckets.length, 60);
    assert.deepEqual(buckets[0], { at: new Date(SINCE), finished: 4, failed: 0, p50Ms: 200, p95Ms: 1_000 });
    assert.deepEqual(buckets[1], { at: new Date(SINCE + 60_000), finished: 1, failed: 1, p50Ms: 50, p95Ms: 50 });
    assert.deepEqual(buckets[2], { at: new Date(SINCE + 120_000), finished: 0, failed: 0 });
    assert.deepEqual(overall(steps), { p50Ms: 200, p95Ms: 1_000 });
    assert.equal(a.full, false);
  });

  it('an open entry is not counted, and a full history that began inside the window says it was cut', () => {
    const ten = Array.from({ length: HISTORY_STEPS }, (_, i) => ({ ends: (i + 1) * 1_000, took: 10 }));
    const full = endedSteps(history(ten), SINCE, NOW, HISTORY_STEPS);
    assert.equal(full.full, true);
    const open = opened(history([{ ends: 1_000, took: 10 }]), { seq: 2, route: '/s', now: new Date(SINCE + 2_000), takeover: false });
    assert.equal(endedSteps(open, SINCE, NOW, HISTORY_STEPS).steps.length, 1);
  });
});

describe('the throughput picture', () => {
  const picture = (over: Partial<Throughput> = {}): Throughput => {
    const steps = endedSteps(history([{ ends: 10_000, took: 100 }, { ends: 70_000, took: 900, outcome: 'failed' }]), SINCE, NOW, HISTORY_STEPS).steps;
    return {
      since: new Date(SINCE), now: new Date(NOW), buckets: bucketsOf(steps, SINCE, NOW), finished: 2, ...overall(steps), entities: 1, cap: 1000, cut: [], ...over,
    };
  };

  it('is an SVG with no script, no style attribute, a title, a description and axis labels', () => {
    const svg = throughputSvg(picture());
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.doesNotMatch(svg, /<script|style=|on[a-z]+=|javascript:|href=/i);
    assert.match(svg, /<title id="throughput-title">/);
    assert.match(svg, /<desc id="throughput-desc">2 steps finished in the last 60 minutes; busiest minute 10:00 UTC with 1; p50 100 ms, p95 900 ms; 1 failed for good\.<\/desc>/);
    assert.match(svg, />10:00<\/text>/);
    assert.match(svg, />10:59<\/text>/);
    assert.match(svg, /steps \/ min/);
    assert.equal((svg.match(/<polyline /g) ?? []).length, 2, 'the p50 and p95 lines');
    assert.equal((svg.match(/fill="#c0392b"/g) ?? []).length, 1, 'one failed bar');
  });

  it('says what was cut, and escapes its text', () => {
    const figure = throughputFigure(picture({ cut: ['entities', 'history'] }));
    assert.match(figure, /cut: more entities moved than the picture reads/);
    assert.match(figure, /cut: some chains finished more steps than their lock keeps/);
    assert.doesNotMatch(figure, /<script|style=/i);
    // Every text node of the figure is escaped: no raw quote or ampersand outside the markup.
    const text = figure.replace(/<[^>]*>/g, '');
    assert.doesNotMatch(text, /[<>"]|&(?!amp;|lt;|gt;|quot;|#39;)/);
  });

  it('an empty hour draws an empty chart that says so', () => {
    const empty = throughputSvg({ since: new Date(SINCE), now: new Date(NOW), buckets: bucketsOf([], SINCE, NOW), finished: 0, entities: 0, cap: 1000, cut: [] });
    assert.match(empty, /0 steps finished in the last 60 minutes\./);
    assert.doesNotMatch(empty, /<polyline/);
  });
});

// The overview's counts table, pure: a row per kind, what needs a person first (failed, then no
// progress for stallAfter), each count a link to the list it counts, a bounded count written
// "10,000+", every text escaped.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countsTableHtml, formatCount } from '../../src/ops/status/counts-table';
import type { KindCounts } from '../../src/ops/inspect/inspector';

const exact = (count: number) => ({ count, exact: true });
const row = (kind: string, over: Partial<KindCounts> = {}, namespace = ''): KindCounts =>
  ({ kind, namespace, failed: exact(0), live: exact(0), waitingLong: exact(0), complete: exact(0), cancelled: exact(0), ...over });

describe('counts table', () => {
  it('writes counts with separators, and a bounded one with +', () => {
    assert.equal(formatCount(exact(0)), '0');
    assert.equal(formatCount(exact(1234567)), '1,234,567');
    assert.equal(formatCount({ count: 10_000, exact: false }), '10,000+');
  });

  it('puts failed first, links each count to its list, and marks what needs a person', () => {
    const html = countsTableHtml([row('Order', { failed: exact(2), live: exact(40), complete: { count: 10_000, exact: false } }), row('Line')], '/ops', false);
    const heads = [...html.matchAll(/<th title="[^"]*">([^<]+)<\/th>/g)].map((m) => m[1]);
    assert.deepEqual(heads, ['Failed', 'No progress ≥ stallAfter', 'Live', 'Complete', 'Cancelled']);
    assert.match(html, /<a class="count attention" data-count="failed" data-exact="true" href="\/ops\/\?state=failed&amp;kind=Order&amp;namespace=">2<\/a>/);
    assert.match(html, /<a class="count" data-count="live" data-exact="true" href="\/ops\/\?kind=Order&amp;namespace=">40<\/a>/, 'live links to the kind\'s overview');
    assert.match(html, /<tr data-kind="Line"[^>]*>.*<a class="count" data-count="failed"[^>]*>0<\/a>/, 'no mark on none');
    assert.match(html, /data-count="complete" data-exact="false" href="[^"]*">10,000\+<\/a>/);
  });

  it('escapes kinds and namespaces, and shows the namespace column only when asked', () => {
    const html = countsTableHtml([row('<K>', {}, 'ns"1')], '/ops', true);
    assert.ok(!html.includes('<K>'));
    assert.match(html, /<th>&lt;K&gt;<\/th><td>ns&quot;1<\/td>/);
    assert.equal(countsTableHtml([row('K')], '/ops', false).includes('<th>Namespace</th>'), false);
  });

  it('draws nothing without counts', () => {
    assert.equal(countsTableHtml([], '/ops', false), '');
  });
});

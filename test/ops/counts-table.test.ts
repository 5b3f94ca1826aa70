// The overview's counts table, pure: a row per kind, a column per state (failed first), each count
// a link to its filtered list, a bounded count written "10,000+", every text escaped.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countsTableHtml, formatCount, type CountCell } from '../../src/ops/status/counts-table';

const cell = (kind: string, state: CountCell['state'], count: number, exact = true, namespace = ''): CountCell => ({ kind, namespace, state, count, exact });

describe('counts table', () => {
  it('writes counts with separators, and a bounded one with +', () => {
    assert.equal(formatCount(0, true), '0');
    assert.equal(formatCount(1234567, true), '1,234,567');
    assert.equal(formatCount(10_000, false), '10,000+');
  });

  it('puts failed before every other state and links each count to its list', () => {
    const html = countsTableHtml([cell('Order', 'complete', 3), cell('Order', 'failed', 2), cell('Line', 'failed', 0), cell('Line', 'complete', 10_000, false)], '/ops', false);
    const heads = [...html.matchAll(/<th class="state (\w+)"/g)].map((m) => m[1]);
    assert.deepEqual(heads, ['failed', 'complete']);
    assert.match(html, /<a class="count attention" data-count="failed" data-exact="true" href="\/ops\/\?state=failed&amp;kind=Order&amp;namespace=">2<\/a>/);
    assert.match(html, /<a class="count" data-count="failed" data-exact="true" href="[^"]*kind=Line[^"]*">0<\/a>/, 'no attention for none');
    assert.match(html, /data-exact="false" href="[^"]*">10,000\+<\/a>/);
  });

  it('escapes kinds and namespaces, and shows the namespace column only when asked', () => {
    const html = countsTableHtml([cell('<K>', 'failed', 1, true, 'ns"1')], '/ops', true);
    assert.ok(!html.includes('<K>'));
    assert.match(html, /<th>&lt;K&gt;<\/th><td>ns&quot;1<\/td>/);
    assert.equal(countsTableHtml([cell('K', 'failed', 1)], '/ops', false).includes('<th>Namespace</th>'), false);
  });

  it('draws nothing without counts', () => {
    assert.equal(countsTableHtml([], '/ops', false), '');
  });
});

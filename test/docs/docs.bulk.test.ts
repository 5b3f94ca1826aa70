// The numbers the operating guide states of bulk actions, against the code they come from.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COUNT_CAP, PAGE_SIZE } from '../../src/ops/bulk/targets';
import { CONCURRENCY } from '../../src/ops/bulk/page';
import { MAX_ERRORS } from '../../src/ops/bulk/operation';
import { MAX_OPERATIONS } from '../../src/ops/bulk/view';
import { ROOT } from '../support/doc-blocks';

const prose = (page: string): string => readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '').replace(/\s+/g, ' ');

describe('numbers the docs state of bulk actions, from the code', () => {
  it('the operating guide gives the page size, the count\'s cap, the concurrency and the errors kept', () => {
    const text = prose('docs/guides/operating.md');
    assert.match(text, new RegExp(`page of ${PAGE_SIZE} targets`));
    assert.match(text, new RegExp(`up to ${COUNT_CAP.toLocaleString('en-US')}: past that, "${COUNT_CAP.toLocaleString('en-US')}\\+"`));
    assert.equal(CONCURRENCY, 8);
    assert.match(text, /\(8 at a time/);
    assert.equal(MAX_ERRORS, 3);
    assert.match(text, /latest three errors/);
  });

  it('the references give the page size and the operations listed', () => {
    assert.match(prose('docs/reference/handler-context.md'), new RegExp(`a page of ${PAGE_SIZE} at a time`));
    assert.match(prose('docs/reference/http.md'), new RegExp(`at most ${MAX_OPERATIONS}\\)`));
  });
});

/**
 * What each event writes to a bulk operation's record, in pure functions `(operation, event) →
 * operation` (the record's transitions table; docs/guides/operating.md, "Bulk actions"):
 *
 * | event | from | to |
 * | --- | --- | --- |
 * | `open` (confirmed) | (none) | `running`, counts 0, no cursor |
 * | `advance` (a page finished, more to come) | `running` | `running`, counts added, the page's cursor |
 * | `finish` (the last page finished) | `running` | `done`, counts added, no cursor, `finishedAt` |
 *
 * A page's counts are added with the page's own finishing write (the step that ran it), so a page
 * run again after a crash adds its counts once.
 */
import { TransitionError } from '../../errors/errors';
import { cut, MAX_ERRORS, MAX_SKIP_REASONS, type Operation } from './operation';
import type { BulkAction, BulkFilter } from './filter';
import type { TargetOutcome } from './target';

/** What a page did. */
export interface PageOutcome {
  /** What came of each target it read. */
  targets: TargetOutcome[];
  /** Where the next page starts; undefined when this was the last. */
  cursor?: string;
}

/** A new operation, as confirmed. */
export function open(e: { id: string; action: BulkAction; filter: BulkFilter; by?: string | undefined; now: Date; path: string; matched: number; matchedExact: boolean }): Operation {
  const op: Operation = {
    id: e.id, action: e.action, filter: e.filter, createdAt: e.now, path: e.path, state: 'running',
    matched: e.matched, matchedExact: e.matchedExact, done: 0, skipped: 0, skips: {}, failed: 0, errors: [], pages: 0,
  };
  if (e.by !== undefined) op.by = e.by;
  return op;
}

/** A page finished: its counts added; `running` with the next page's cursor, or `done` after the last. */
export function pageDone(op: Operation, page: PageOutcome, now: Date): Operation {
  if (op.state !== 'running') throw new TransitionError(`operation ${op.id} is ${op.state}; no page of it runs`);
  const { cursor: _cursor, ...rest } = op;
  const next: Operation = { ...rest, pages: op.pages + 1, skips: { ...op.skips }, errors: [...op.errors] };
  for (const t of page.targets) {
    if (t.outcome === 'done') next.done++;
    else if (t.outcome === 'skipped') {
      next.skipped++;
      addSkip(next.skips, cut(t.why));
    } else {
      next.failed++;
      next.errors = [...next.errors, cut(t.error)].slice(-MAX_ERRORS);
    }
  }
  if (page.cursor !== undefined) return { ...next, cursor: page.cursor };
  return { ...next, state: 'done', finishedAt: now };
}

/** Counts a skip under its reason; past {@link MAX_SKIP_REASONS} reasons, under "other". */
function addSkip(skips: Record<string, number>, why: string): void {
  const reasons = Object.keys(skips).filter((r) => r !== OTHER);
  const key = why in skips || reasons.length < MAX_SKIP_REASONS ? why : OTHER;
  skips[key] = (skips[key] ?? 0) + 1;
}

const OTHER = 'other reasons';

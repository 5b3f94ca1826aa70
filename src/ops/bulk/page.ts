/**
 * One page of a bulk operation: read the next targets and act on each, fenced (`target.ts`).
 * Returns what came of them and where the next page starts (a decision); the operation's step
 * (`step.ts`) writes it with its finishing write. Errors that say the store could not be reached
 * are thrown, so the page's step fails and is retried whole: the targets it already acted on are
 * fenced out of the second run.
 */
import type { Key } from '@google-cloud/datastore';
import { LockerError, TransitionError } from '../../errors/errors';
import { errorMessage } from '../../errors/error-text';
import type { FanOutActionResult } from '../../fanout/operator';
import type { PageOutcome } from './transitions';
import type { Operation } from './operation';
import { actOn, guardOf, type TargetActions, type TargetOutcome } from './target';
import { fanOutOf, targetPage, type TargetReads } from './targets';

/** Targets acted on at once within a page. */
export const CONCURRENCY = 8;

/** What a page uses: the store's reads, the operator's actions, the clock and `stallAfter`. */
export interface PageParts extends TargetReads {
  readonly actions: TargetActions;
  /** `locker.retryFanOutChildren()`. */
  retryFanOut(parent: Key, options: { seq: number }): Promise<FanOutActionResult>;
  readonly config: { readonly clock: () => number; readonly stallAfter: number };
}

/** Runs the next page of `op`. */
export async function runPage(parts: PageParts, op: Operation): Promise<PageOutcome> {
  if (op.filter.fanOut !== undefined) return { targets: await fanOutPage(parts, op) };
  const { stallAfter, clock } = parts.config;
  const page = await targetPage(parts, op.action, op.filter, op.createdAt, stallAfter, op.cursor);
  const now = clock();
  const acted = await inPool(page.targets, (t) => actOn(parts.actions, op.action, t, guardOf(op.action, t, now, stallAfter)));
  const transient = acted.find((a) => a.cause !== undefined && isTransient(a.cause));
  if (transient) throw transient.cause;
  const targets = acted.map((a) => a.outcome);
  return page.cursor === undefined ? { targets } : { targets, cursor: page.cursor };
}

/** A fan-out's failed children, retried by `retryFanOutChildren()` on its parent, while the parent still waits at that fan-out's join. */
async function fanOutPage(parts: PageParts, op: Operation): Promise<TargetOutcome[]> {
  const header = await fanOutOf(parts, op.filter);
  if (!header) return [{ outcome: 'skipped', why: 'the fan-out does not exist' }];
  let result: FanOutActionResult;
  try {
    result = await parts.retryFanOut(header.parent, { seq: header.seq + 1 });
  } catch (error) {
    if (error instanceof TransitionError) return [{ outcome: 'skipped', why: 'the fan-out no longer waits for its children (its join ran, or it was cancelled)' }];
    throw error;
  }
  if (result.fanout !== header.id) return [{ outcome: 'skipped', why: 'the parent waits at another fan-out now' }];
  const done: TargetOutcome[] = Array.from({ length: result.children }, () => ({ outcome: 'done' }));
  return [...done, ...(result.skipped ?? []).map((s): TargetOutcome => ({ outcome: 'skipped', why: s.error }))];
}

/** An error that says the store (or the queue) could not be reached now: the page is retried rather than the target counted failed. */
function isTransient(error: unknown): boolean {
  return error instanceof LockerError && error.status === 503;
}

/** What came of one target, with the error that made it `failed`. */
interface Acted {
  outcome: TargetOutcome;
  cause?: unknown;
}

/** `fn` on each item, {@link CONCURRENCY} at a time, answers in order; an error is caught as a `failed` outcome with its cause. */
async function inPool<T>(items: readonly T[], fn: (item: T) => Promise<TargetOutcome>): Promise<Acted[]> {
  const out: Acted[] = new Array<Acted>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = { outcome: await fn(items[i]!) };
      } catch (error) {
        out[i] = { outcome: { outcome: 'failed', error: errorMessage(error) }, cause: error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  return out;
}

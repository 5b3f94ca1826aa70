/**
 * A fan-out as the operator sees it (`locker.inspect().step(parent)`): its state, counts per state,
 * the oldest pending child and a few failures. Read by key through the page records: an
 * operator's read, proportional to the number of children.
 */
import type { Key } from '@google-cloud/datastore';
import { allChildren, getHeader, type ReadParts } from './read-children';
import { countStates, fanOutId, type ChildCounts, type FanOutState } from './records';

/** Failures shown at most. */
const SAMPLE = 5;

/** A child still pending. */
export interface PendingChild {
  /** The child's entity. */
  key: Key;
  /** When its record was written. */
  startedAt: Date;
}

/** A child that failed, was cancelled or timed out. */
export interface FailedChild {
  /** The child's entity. */
  key: Key;
  /** `failed`, `cancelled` or `timedOut`. */
  state: string;
  /** Why. */
  error?: string;
}

/** A parent's fan-out, for the operator. */
export interface FanOutView {
  /** The fan-out's id. */
  id: string;
  /** `writing`, `sealed` (waiting for children), `joining` (the join was started) or `cancelled`. */
  state: FanOutState;
  /** Children per state, now. */
  counts: ChildCounts;
  /** The pending child added first, when one is pending. */
  oldestPending?: PendingChild;
  /** Up to five children that failed, were cancelled or timed out, with why. */
  failures: FailedChild[];
  /** When it was sealed. */
  sealedAt?: Date;
  /** When pending children time out, if ever. */
  deadline?: Date;
  /** Once joining: the outcome the join was told. */
  outcome?: string;
}

/** The fan-out step `seq` of `chain` on `parent` started, if it did. */
export async function viewFanOut(parts: ReadParts, parent: Key, chain: string | undefined, seq: number): Promise<FanOutView | undefined> {
  if (chain === undefined || seq < 1) return undefined;
  const header = await getHeader(parts, fanOutId(parent, chain, seq), parent.namespace);
  if (!header) return undefined;
  const children = await allChildren(parts, header);
  const view: FanOutView = { id: header.id, state: header.state, counts: countStates(children), failures: [] };
  const pending = children.filter((c) => c.state === 'pending').sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  if (pending[0]) view.oldestPending = { key: pending[0].key, startedAt: pending[0].startedAt };
  for (const c of children) {
    if (view.failures.length >= SAMPLE) break;
    if (c.state === 'failed' || c.state === 'cancelled' || c.state === 'timedOut') view.failures.push({ key: c.key, state: c.state, ...(c.error !== undefined && { error: c.error }) });
  }
  if (header.sealedAt) view.sealedAt = header.sealedAt;
  if (header.deadline) view.deadline = header.deadline;
  if (header.outcome !== undefined) view.outcome = header.outcome;
  return view;
}

/**
 * A fan-out as the operator sees it (`locker.inspect().step(parent)`): its state, counts per state,
 * the oldest pending child and a few failures. Read by key through the page records: an
 * operator's read, proportional to the number of children.
 */
import type { Key } from '@google-cloud/datastore';
import type { KeyWriting } from '../keys/key-writing';
import { allChildren, getHeader, type ReadParts } from './read-children';
import { countStates, fanOutId, type ChildCounts, type FanOutState } from './records';

/** Failures shown at most. */
const SAMPLE = 5;

/** A child still pending. */
export interface PendingChild<K = Key> {
  /** The child's entity: a `DocumentReference` on a `FirestoreStore`. */
  key: K;
  /** The key as `X-Lock-Key` encodes it (the status page's links carry it). */
  encodedKey: string;
  /** The key as the store's users write it: `Line:"a"`; a document's path on a `FirestoreStore`. */
  keyPath: string;
  /** When its record was written. */
  startedAt: Date;
}

/** A child that failed, was cancelled or timed out. */
export interface FailedChild<K = Key> {
  /** The child's entity: a `DocumentReference` on a `FirestoreStore`. */
  key: K;
  /** The key as `X-Lock-Key` encodes it. */
  encodedKey: string;
  /** The key as the store's users write it (`PendingChild.keyPath`). */
  keyPath: string;
  /** `failed`, `cancelled` or `timedOut`. */
  state: string;
  /** Why. */
  error?: string;
}

/** A parent's fan-out, for the operator. */
export interface FanOutView<K = Key> {
  /** The fan-out's id. */
  id: string;
  /** `writing`, `sealed` (waiting for children), `joining` (the join was started) or `cancelled`. */
  state: FanOutState;
  /** Children per state, now. */
  counts: ChildCounts;
  /** The pending child added first, when one is pending. */
  oldestPending?: PendingChild<K>;
  /** Up to five children that failed, were cancelled or timed out, with why. */
  failures: FailedChild<K>[];
  /** When it was sealed. */
  sealedAt?: Date;
  /** When pending children time out, if ever. */
  deadline?: Date;
  /** Once joining: the outcome the join was told. */
  outcome?: string;
  /** Why the sweep cancelled it: its parent abandoned it before the seal. */
  reason?: string;
}

/** The fan-out step `seq` of `chain` on `parent` started, if it did, each child key written by `writing`. */
export async function viewFanOut(
  parts: ReadParts, parent: Key, chain: string | undefined, seq: number, writing: KeyWriting,
): Promise<FanOutView | undefined> {
  if (chain === undefined || seq < 1) return undefined;
  const header = await getHeader(parts, fanOutId(parent, chain, seq), parent.namespace);
  if (!header) return undefined;
  const children = await allChildren(parts, header);
  const view: FanOutView = { id: header.id, state: header.state, counts: countStates(children), failures: [] };
  const pending = children.filter((c) => c.state === 'pending').sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  if (pending[0]) view.oldestPending = { key: pending[0].key, encodedKey: writing.encode(pending[0].key), keyPath: writing.show(pending[0].key), startedAt: pending[0].startedAt };
  for (const c of children) {
    if (view.failures.length >= SAMPLE) break;
    if (c.state === 'failed' || c.state === 'cancelled' || c.state === 'timedOut') view.failures.push({ key: c.key, encodedKey: writing.encode(c.key), keyPath: writing.show(c.key), state: c.state, ...(c.error !== undefined && { error: c.error }) });
  }
  if (header.sealedAt) view.sealedAt = header.sealedAt;
  if (header.deadline) view.deadline = header.deadline;
  if (header.outcome !== undefined) view.outcome = header.outcome;
  if (header.reason !== undefined) view.reason = header.reason;
  return view;
}

/** A child's key as the step JSON shows keys: its path, its `X-Lock-Key` encoding and its namespace. */
export interface ChildKeyJson {
  /** e.g. `Line:"a"`. */
  keyPath: string;
  /** The key as `X-Lock-Key` encodes it. */
  encodedKey: string;
  /** The key's namespace; empty in the default namespace. */
  namespace: string;
}

function keyJson(child: PendingChild | FailedChild): ChildKeyJson {
  return { keyPath: child.keyPath, encodedKey: child.encodedKey, namespace: child.key.namespace ?? '' };
}

/**
 * A fan-out view as the status page's `step.json` shows it: child keys encoded like the step's own
 * key (path, `X-Lock-Key` encoding, namespace), never as raw key objects; dates as ISO text.
 */
export function fanOutJson(view: FanOutView): Record<string, unknown> {
  const { oldestPending, failures, sealedAt, deadline, ...rest } = view;
  return {
    ...rest,
    ...(oldestPending && { oldestPending: { ...keyJson(oldestPending), startedAt: oldestPending.startedAt.toISOString() } }),
    failures: failures.map((f) => ({ ...keyJson(f), state: f.state, ...(f.error !== undefined && { error: f.error }) })),
    ...(sealedAt && { sealedAt: sealedAt.toISOString() }),
    ...(deadline && { deadline: deadline.toISOString() }),
  };
}

/**
 * The stored records of a fan-out (docs/design.md, section 18), as pure functions: their kinds and
 * keys, the ids derived from the parent's step and the children's keys, and the properties each
 * record is written with and read back from. All live in the parent's namespace, and so do the
 * children (a child's chain id names its record, in its own namespace).
 *
 * - The header (`LockerFanOut`, one per fan-out): `writing` while children are added, `sealed` once
 *   all were, `joining` once the join step was committed, `cancelled` by an operator (`cancelFanOut()`;
 *   with the join asked for, `joining` again once it is committed, with the outcome `cancelled`) or
 *   by the sweep when its parent abandoned it while `writing` (`abandon.ts`).
 * - A child record (`LockerFanOutChild`, one per child): `pending` until its chain ended, then
 *   `succeeded`, `failed`, `cancelled` or `timedOut`, and the page that listed it first. Its
 *   kickoff marks it `started` in the child entity's own commit: a child so marked, or settled, is
 *   never started again (a retried parent reads it with the entity). It is read by key only (no
 *   query asks for it).
 * - A page record (`LockerFanOutPage`, one per page of up to 100 children): the ids of the page's
 *   children, so every child can be read by key (strongly consistent) without a query.
 * - A page's done mark (`LockerFanOutDone`, at most one per page): written once, after the seal, by
 *   the completion check that read every child of the page settled (by key); an operator's retry
 *   of a child deletes its page's mark. The check reads the marks, not every child
 *   (`join-trigger.ts`).
 */
import { createHash } from 'node:crypto';
import { Key } from '@google-cloud/datastore';
import type { Json, Properties } from '../types';
import { keyPath } from '../keys/key-codec';
import { keyString } from '../keys/keys';

/** The kind of a fan-out's header. */
export const HEADER_KIND = 'LockerFanOut';
/** The kind of a child record. */
export const CHILD_KIND = 'LockerFanOutChild';
/** The kind of a page record. */
export const PAGE_KIND = 'LockerFanOutPage';
/** The kind of a page's done mark. */
export const DONE_KIND = 'LockerFanOutDone';
/** Children per page record (and per batch of kickoffs). */
export const PAGE_SIZE = 100;

/**
 * Pages `fanOut()` writes at once. Page n starts only once page n - PAGE_WINDOW is written, so
 * pages interrupted by a crash leave at most PAGE_WINDOW - 1 absent pages between two written
 * ones, and a reader that stops after PAGE_WINDOW absent pages in a row has found them all
 * (`pagesFrom()`).
 */
export const PAGE_WINDOW = 8;

/** Where a fan-out is. */
export type FanOutState = 'writing' | 'sealed' | 'joining' | 'cancelled';
/** Where one child is: pending until its chain ended. */
export type ChildState = 'pending' | 'succeeded' | 'failed' | 'cancelled' | 'timedOut';
/** The states a child ends in. */
export const SETTLED_STATES = ['succeeded', 'failed', 'cancelled', 'timedOut'] as const;

/** Children per state. */
export interface ChildCounts {
  /** Children added. */
  total: number;
  /** Children whose chain has not ended yet. */
  pending: number;
  /** Children whose chain completed. */
  succeeded: number;
  /** Children whose chain failed for good (or that could not be started, or whose entity is gone). */
  failed: number;
  /** Children whose chain an operator cancelled. */
  cancelled: number;
  /** Children still pending when the deadline passed. */
  timedOut: number;
}

/** A header, as read. */
export interface Header {
  id: string;
  state: FanOutState;
  /** The parent entity's key. */
  parent: Key;
  /** The parent's chain. */
  chain: string;
  /** The parent step that fanned out; the join is step `seq + 1`. */
  seq: number;
  /** The join's task name (the id of its ledger record). */
  joinTask: string;
  /** The join's path and body. */
  path: string;
  body: string;
  /** The policy, as JSON text. */
  policy: string;
  /** When pending children count as timed out, if ever. */
  deadline?: Date;
  /** Page records written (known once sealed). */
  pages: number;
  /** Children added (known once sealed). */
  total: number;
  /** The children's kinds (known once sealed): the operator's counts of the children by `lock_run` are per kind. */
  kinds?: string[];
  /** When the header was first written (indexed: `locker.inspect().fanOuts()` lists the newest first). */
  createdAt: Date;
  sealedAt?: Date;
  /** When the sweep next looks at the fan-out (indexed): while `writing` or `sealed`, and while a cancel is unfinished. */
  due?: Date;
  /** Once joining: the outcome and the counts the join was decided on. */
  outcome?: string;
  counts?: ChildCounts;
  joinedAt?: Date;
  /** Whether a cancel asked for the join to run. */
  cancelJoin?: boolean;
  /** Why a fan-out the sweep cancelled was abandoned (its parent left it `writing` for good). */
  reason?: string;
  /** Times an operator reopened the fan-out by retrying failed children: a join decided on children read before is refused. */
  reopened?: number;
}

/** A child record, as read. */
export interface ChildRecord {
  id: string;
  fanout: string;
  key: Key;
  state: ChildState;
  /** The page record that listed it first (the page its settle checks, the one page `fanIn()` lists it on). */
  page?: number;
  /** Once its chain was started: the chain's first step (written in the kickoff's commit). */
  started?: number;
  error?: string;
  /** The small result the child set, as JSON text. */
  result?: string;
  startedAt: Date;
  settledAt?: Date;
}

/** The id of the fan-out step `seq` of `chain` on `parent` starts: 24 hex digits, the same on every attempt. */
export function fanOutId(parent: Key, chain: string, seq: number): string {
  return createHash('sha256').update(`fanout\n${parent.namespace ?? ''}\n${keyPath(parent)}\n${chain}\n${seq}`).digest('hex').slice(0, 24);
}

/** The chain id of the child on `key` (also its record's id): `f<fan-out id>_<16 hex digits of the key>`. */
export function childChain(fanout: string, key: Key): string {
  return `f${fanout}_${createHash('sha256').update(keyString(key)).digest('hex').slice(0, 16)}`;
}

const CHILD_CHAIN = /^f([0-9a-f]{24})_[0-9a-f]{16}$/;

/** The fan-out a chain id belongs to, when it is a child's chain. */
export function fanOutOfChain(chain: string | undefined): string | undefined {
  return chain === undefined ? undefined : CHILD_CHAIN.exec(chain)?.[1];
}

/** The header's key. */
export function headerKey(id: string, namespace: string | undefined): Key {
  return new Key(namespace ? { namespace, path: [HEADER_KIND, id] } : { path: [HEADER_KIND, id] });
}

/** A child record's key. */
export function childKey(id: string, namespace: string | undefined): Key {
  return new Key(namespace ? { namespace, path: [CHILD_KIND, id] } : { path: [CHILD_KIND, id] });
}

/** Page `n`'s key. */
export function pageKey(fanout: string, n: number, namespace: string | undefined): Key {
  const path = [PAGE_KIND, `${fanout}-p${n}`];
  return new Key(namespace ? { namespace, path } : { path });
}

/** Page `n`'s done mark's key. */
export function doneKey(fanout: string, n: number, namespace: string | undefined): Key {
  const path = [DONE_KIND, `${fanout}-p${n}`];
  return new Key(namespace ? { namespace, path } : { path });
}

/**
 * Properties of records that are never queried. The header's `due` is (the sweep), and its `chain`
 * and `createdAt` (the operator's view: a parent chain's fan-outs, the newest fan-outs); `fanout`
 * stays indexed for an operator's console.
 */
export const UNINDEXED = ['state', 'parent', 'seq', 'joinTask', 'path', 'body', 'policy', 'deadline', 'pages', 'total', 'kinds',
  'sealedAt', 'outcome', 'counts', 'joinedAt', 'cancelJoin', 'reason', 'reopened', 'key', 'error', 'result', 'startedAt', 'settledAt', 'ids', 'page', 'started', 'at'] as const;

/** The header's stored properties. */
export function headerProperties(h: Header, encode: (key: Key) => string): Properties {
  const p: Properties = {
    state: h.state, parent: encode(h.parent), chain: h.chain, seq: h.seq, joinTask: h.joinTask, path: h.path, body: h.body,
    policy: h.policy, pages: h.pages, total: h.total, createdAt: h.createdAt,
  };
  if (h.kinds) p.kinds = JSON.stringify(h.kinds);
  if (h.deadline) p.deadline = h.deadline;
  if (h.sealedAt) p.sealedAt = h.sealedAt;
  if (h.due) p.due = h.due;
  if (h.outcome !== undefined) p.outcome = h.outcome;
  if (h.counts) p.counts = JSON.stringify(h.counts);
  if (h.joinedAt) p.joinedAt = h.joinedAt;
  if (h.cancelJoin !== undefined) p.cancelJoin = h.cancelJoin;
  if (h.reason !== undefined) p.reason = h.reason;
  if (h.reopened !== undefined) p.reopened = h.reopened;
  return p;
}

/** Reads a header; undefined when absent or not one. */
export function readHeader(id: string, p: Properties | undefined, decode: (encoded: string) => Key): Header | undefined {
  if (!p || typeof p.state !== 'string' || typeof p.parent !== 'string' || typeof p.chain !== 'string') return undefined;
  const h: Header = {
    id, state: p.state as FanOutState, parent: decode(p.parent), chain: p.chain, seq: num(p.seq), joinTask: str(p.joinTask),
    path: str(p.path), body: str(p.body), policy: str(p.policy) || '{}', pages: num(p.pages), total: num(p.total),
    createdAt: p.createdAt instanceof Date ? p.createdAt : new Date(0),
  };
  const kinds = typeof p.kinds === 'string' ? parseKinds(p.kinds) : undefined;
  if (kinds) h.kinds = kinds;
  if (p.deadline instanceof Date) h.deadline = p.deadline;
  if (p.sealedAt instanceof Date) h.sealedAt = p.sealedAt;
  if (p.due instanceof Date) h.due = p.due;
  if (typeof p.outcome === 'string') h.outcome = p.outcome;
  if (typeof p.counts === 'string') h.counts = JSON.parse(p.counts) as ChildCounts;
  if (p.joinedAt instanceof Date) h.joinedAt = p.joinedAt;
  if (typeof p.cancelJoin === 'boolean') h.cancelJoin = p.cancelJoin;
  if (typeof p.reason === 'string') h.reason = p.reason;
  if (typeof p.reopened === 'number') h.reopened = p.reopened;
  return h;
}

/** A child record's stored properties. */
export function childProperties(c: ChildRecord, encode: (key: Key) => string): Properties {
  const p: Properties = { fanout: c.fanout, key: encode(c.key), state: c.state, startedAt: c.startedAt };
  if (c.page !== undefined) p.page = c.page;
  if (c.started !== undefined) p.started = c.started;
  if (c.error !== undefined) p.error = c.error;
  if (c.result !== undefined) p.result = c.result;
  if (c.settledAt) p.settledAt = c.settledAt;
  return p;
}

/** Reads a child record; undefined when absent or not one. */
export function readChild(id: string, p: Properties | undefined, decode: (encoded: string) => Key): ChildRecord | undefined {
  if (!p || typeof p.fanout !== 'string' || typeof p.key !== 'string' || typeof p.state !== 'string') return undefined;
  const c: ChildRecord = {
    id, fanout: p.fanout, key: decode(p.key), state: p.state as ChildState, startedAt: p.startedAt instanceof Date ? p.startedAt : new Date(0),
  };
  if (typeof p.page === 'number' && Number.isSafeInteger(p.page)) c.page = p.page;
  if (typeof p.started === 'number' && Number.isSafeInteger(p.started)) c.started = p.started;
  if (typeof p.error === 'string') c.error = p.error;
  if (typeof p.result === 'string') c.result = p.result;
  if (p.settledAt instanceof Date) c.settledAt = p.settledAt;
  return c;
}

/** The ids a page record lists. */
export function readPage(p: Properties | undefined): string[] {
  return Array.isArray(p?.ids) ? p.ids.filter((id): id is string => typeof id === 'string') : [];
}

/** A result as the child record stores it: JSON text of at most {@link MAX_RESULT_BYTES}. */
export function resultText(value: Json): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError('a fan-out result must be JSON');
  if (Buffer.byteLength(text) > MAX_RESULT_BYTES) throw new RangeError(`a fan-out result is at most ${MAX_RESULT_BYTES} bytes of JSON; got ${Buffer.byteLength(text)}`);
  return text;
}

/** The largest result a child may set, in bytes of JSON: results are small; big data belongs in your own entities. */
export const MAX_RESULT_BYTES = 16 * 1024;

/** Counts per state of the children given. */
export function countStates(children: readonly ChildRecord[]): ChildCounts {
  const counts: ChildCounts = { total: children.length, pending: 0, succeeded: 0, failed: 0, cancelled: 0, timedOut: 0 };
  for (const c of children) counts[c.state]++;
  return counts;
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : 0;
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function parseKinds(text: string): string[] | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((k): k is string => typeof k === 'string' && k !== '') : undefined;
  } catch {
    return undefined;
  }
}

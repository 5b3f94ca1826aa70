/**
 * The in-memory store's index of locks, as Datastore's (`lock_state`, `lock_ts`) index serves the
 * operator's lists and counts: per kind, namespace and `lock_state` (and per `lock_run` too), the
 * entities ordered by `lock_ts` then key. Kept on every write, so a list or a count reads a range
 * found by binary search, never every entity. Entities without `lock_state` or a `lock_ts` time are
 * not in it, as in Datastore.
 */
import type { Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';

/** An entity's place in a list: its `lock_ts` and its key as text (the tie-break). */
export interface IndexEntry {
  ts: number;
  id: string;
}

/** What a list is asked for. */
export interface IndexRange {
  kind: string;
  namespace: string;
  state: string;
  run?: string | undefined;
  /** `lock_ts` at or after, ms. */
  from?: number | undefined;
  /** `lock_ts` before, ms. */
  before?: number | undefined;
}

/** A range of one list (a view: do not change it). */
export interface IndexSpan {
  list: readonly IndexEntry[];
  lo: number;
  hi: number;
}

/** The index (see the file's comment). */
export class LockIndex {
  private readonly lists = new Map<string, IndexEntry[]>();
  /** Where each indexed entity is: the lists it is in and its entry. */
  private readonly placed = new Map<string, { lists: string[]; entry: IndexEntry }>();

  /** Records that the entity `id` (at `key`) now holds `props` (undefined: deleted). */
  update(id: string, key: Key, props: Properties | undefined): void {
    const old = this.placed.get(id);
    const state = props?.lock_state;
    const ts = props?.lock_ts;
    const lists = typeof state === 'string' && ts instanceof Date ? listsOf(key, state, props!.lock_run) : [];
    const entry = ts instanceof Date ? { ts: ts.getTime(), id } : undefined;
    if (old && entry && old.entry.ts === entry.ts && sameLists(old.lists, lists)) return;
    if (old) {
      for (const name of old.lists) remove(this.lists.get(name)!, old.entry);
      this.placed.delete(id);
    }
    if (!entry || lists.length === 0) return;
    for (const name of lists) {
      let list = this.lists.get(name);
      if (!list) this.lists.set(name, (list = []));
      list.splice(lowerBound(list, entry), 0, entry);
    }
    this.placed.set(id, { lists, entry });
  }

  /** Where `range`'s entries are: positions `lo` (included) to `hi` (excluded) of a list ordered oldest `lock_ts` first (two binary searches, no copy). */
  span(range: IndexRange): IndexSpan {
    const list = this.lists.get(listName(range.kind, range.namespace, range.state, range.run)) ?? [];
    const lo = range.from === undefined ? 0 : lowerBound(list, { ts: range.from, id: '' });
    const hi = range.before === undefined ? list.length : lowerBound(list, { ts: range.before, id: '' });
    return { list, lo, hi: Math.max(lo, hi) };
  }

  /** How many entries `range` holds. */
  count(range: IndexRange): number {
    const { lo, hi } = this.span(range);
    return hi - lo;
  }
}

/** Orders entries by `lock_ts`, then key. */
export function compareEntries(a: IndexEntry, b: IndexEntry): number {
  return a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The first position whose entry is not before `entry`. */
export function lowerBound(list: readonly IndexEntry[], entry: IndexEntry, from = 0, to = list.length): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareEntries(list[mid]!, entry) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function listsOf(key: Key, state: string, run: unknown): string[] {
  const ns = key.namespace ?? '';
  const lists = [listName(key.kind, ns, state, undefined)];
  if (typeof run === 'string' && run !== '') lists.push(listName(key.kind, ns, state, run));
  return lists;
}

function listName(kind: string, namespace: string, state: string, run: string | undefined): string {
  return run === undefined ? `${kind}\u0000${namespace}\u0000${state}` : `${kind}\u0000${namespace}\u0000${state}\u0000${run}`;
}

function sameLists(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

function remove(list: IndexEntry[], entry: IndexEntry): void {
  const at = lowerBound(list, entry);
  if (list[at] && compareEntries(list[at]!, entry) === 0) list.splice(at, 1);
}

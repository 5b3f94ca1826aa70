/**
 * Reading a fan-out's records by key, strongly consistent on every store: the header, a page's
 * children, every child (through the page records). The completion check confirms "no child is
 * pending" this way, never by a query alone.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Key } from '@google-cloud/datastore';
import { CHAIN_SETTINGS } from '../chain/next-step';
import type { Dispatcher } from '../chain/dispatcher';
import type { Ledger } from '../chain/ledger';
import type { Emit } from '../events/emit';
import type { Locks } from '../locks/locks';
import type { StoreReads } from '../store/reads';
import { decodeKey } from '../keys/key-codec';
import type { Properties } from '../types';
import { childKey, doneKey, headerKey, PAGE_WINDOW, pageKey, readChild, readHeader, readPage, type ChildRecord, type Header } from './records';

/**
 * What fan-out code reads of the configuration: the clock, the logger, when the sweep looks again
 * (`stallAfter`), the key's app id, and the alert rules a seal keeps
 * unsent claims by (never the store, the queue or the alerter themselves: they are reached through their parts).
 */
export const FANOUT_SETTINGS = [...CHAIN_SETTINGS, 'logger', 'keyAppId'] as const satisfies readonly SettingName[];
export type FanOutSettings = Settings<typeof FANOUT_SETTINGS>;

/** The port fan-out code reads and writes through: the parts it uses, with its settings (not the whole configuration). */
export interface FanParts {
  readonly config: FanOutSettings;
  readonly locks: Locks;
  readonly reads: StoreReads;
  readonly emit: Emit;
  readonly dispatcher: Dispatcher;
  readonly ledger: Ledger;
}

/** What a read of the records needs. */
export type ReadParts = Pick<FanParts, 'reads'>;

/** Reads many keys, in order (a lookup per 1,000 keys where the store has `readMany`). */
export function getMany(parts: ReadParts, keys: readonly Key[]): Promise<(Properties | undefined)[]> {
  return parts.reads.getMany(keys);
}

/** The header of fan-out `id`, read by key. */
export async function getHeader(parts: ReadParts, id: string, namespace: string | undefined): Promise<Header | undefined> {
  return readHeader(id, await parts.reads.get(headerKey(id, namespace)), decodeKey);
}

/** The child ids page `n` lists. */
export async function pageIds(parts: ReadParts, fanout: string, n: number, namespace: string | undefined): Promise<string[]> {
  return readPage(await parts.reads.get(pageKey(fanout, n, namespace)));
}

/**
 * The page count of fan-out `fanout` as written so far, pages `from` on read in windows of
 * {@link PAGE_WINDOW}: one past the last page that lists a child, or `from` if none past it does.
 * Pages are written PAGE_WINDOW at a time, so a crash leaves fewer than PAGE_WINDOW absent pages
 * between two written ones; a window with none written ends the search.
 */
export async function pagesFrom(parts: ReadParts, fanout: string, namespace: string | undefined, from: number): Promise<number> {
  let count = from;
  for (let start = from; ; start += PAGE_WINDOW) {
    const pages = await getMany(parts, Array.from({ length: PAGE_WINDOW }, (_, i) => pageKey(fanout, start + i, namespace)));
    const last = Math.max(...pages.map((p, i) => (readPage(p).length > 0 ? start + i + 1 : 0)));
    if (last === 0) return count;
    count = last;
  }
}

/** The child records of `ids`, read by key; a missing record reads as undefined. */
export async function getChildren(parts: ReadParts, ids: readonly string[], namespace: string | undefined): Promise<(ChildRecord | undefined)[]> {
  const props = await getMany(parts, ids.map((id) => childKey(id, namespace)));
  return props.map((p, i) => readChild(ids[i]!, p, decodeKey));
}

/** Every child id of the fan-out, from its `pages` page records, with the pages that list it. */
async function listings(parts: ReadParts, header: Header): Promise<Map<string, Set<number>>> {
  const pages = await getMany(parts, Array.from({ length: header.pages }, (_, n) => pageKey(header.id, n, header.parent.namespace)));
  const listed = new Map<string, Set<number>>();
  pages.forEach((p, n) => {
    for (const id of readPage(p)) listed.set(id, (listed.get(id) ?? new Set<number>()).add(n));
  });
  return listed;
}

/**
 * Whether `record`, read through page `n`, is listed there: a child is listed on one page, the one
 * its record names (a retried attempt whose source gave another order may list it on a second page
 * too). A record naming no page (written before pages were named) is listed wherever it appears.
 */
export function listedOn(record: ChildRecord, n: number): boolean {
  return record.page === undefined || record.page === n;
}

/**
 * Every child record of the fan-out, by key, each once: those the page they name lists (so the
 * counts agree with what `fanIn()` lists page by page). A child a page lists with no record never
 * started (its record is written before its kickoff; the attempt that listed it died first) and
 * does not count.
 */
export async function allChildren(parts: ReadParts, header: Header): Promise<ChildRecord[]> {
  const listed = await listings(parts, header);
  const records = await getChildren(parts, [...listed.keys()], header.parent.namespace);
  return records.filter((r): r is ChildRecord => r !== undefined && [...listed.get(r.id)!].some((n) => listedOn(r, n)));
}

/** The child records page `n` lists, each only on the page its record names (see {@link listedOn}). */
export async function pageChildren(parts: ReadParts, fanout: string, n: number, namespace: string | undefined): Promise<ChildRecord[]> {
  const records = await getChildren(parts, await pageIds(parts, fanout, n, namespace), namespace);
  return records.filter((r): r is ChildRecord => r !== undefined && listedOn(r, n));
}

/** The children still pending, read by key from the pages not marked done (a marked page has none). */
export async function pendingChildren(parts: ReadParts, header: Header): Promise<ChildRecord[]> {
  const ns = header.parent.namespace;
  const marks = await getMany(parts, Array.from({ length: header.pages }, (_, n) => doneKey(header.id, n, ns)));
  const open = marks.flatMap((mark, n) => (mark ? [] : [pageKey(header.id, n, ns)]));
  const ids = [...new Set((await getMany(parts, open)).flatMap((p) => readPage(p)))];
  return (await getChildren(parts, ids, ns)).filter((c): c is ChildRecord => c?.state === 'pending');
}

/**
 * The operator's search (`locker.inspect().search(text)`): one box that takes what the status page
 * shows. The text is read as each of these, and every reading that can match is looked up:
 *
 * - a key as the page writes it (`Counter:"counters-12"`, `Order:42/Line:"a"`: parents included),
 *   looked up by key in each namespace the search covers; on a `FirestoreStore`, a document's path
 *   (`Order/o-1`), which says its namespace (the store's key type reads it: `KeyType.parse`);
 * - a key as `X-Lock-Key` encodes it (the page's links carry it);
 * - a chain id: the entities whose `lock_chain` is it, one keys-only query per kind and namespace.
 *
 * A bounded number of store calls, run concurrently: one lookup, and a query per kind and
 * namespace; never a scan.
 */
import type { Key } from '@google-cloud/datastore';
import { keyIdentity } from '../../keys/key-path';
import type { StoreReads } from '../../store/reads';
import type { Properties } from '../../types';

/** Where a search looks. */
export interface SearchScope {
  /** The kinds searched by chain id. */
  kinds: readonly string[];
  /** The namespaces searched (`''` is the default one). */
  namespaces: readonly string[];
}

/** How the text was read, for a match. */
export type SearchReading = 'key' | 'encoded key' | 'chain id';

/** An entity the search found, with how. */
export interface SearchMatch {
  key: Key;
  properties: Properties;
  by: SearchReading;
}

/** The longest text searched. */
export const MAX_SEARCH_LENGTH = 1_500;
/** Entities found by chain id at most, per kind and namespace. */
const CHAIN_MATCHES = 20;
/** What a chain id may be (the ids this library writes, and those a user passes to `schedule()`). */
const CHAIN_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

/** How a search reads a key: as `X-Lock-Key` encodes it (`decode` throws when it is not one), and as the page writes it (`KeyType.parse`). */
export interface KeyReading {
  decode: (encoded: string) => Key;
  parse: (text: string, namespaces: readonly string[]) => Key[];
}

/** The entities `text` names, each once. */
export async function searchEntities(reads: StoreReads, text: string, scope: SearchScope, reading: KeyReading): Promise<SearchMatch[]> {
  const wanted = text.trim();
  if (wanted === '') throw new RangeError('search for a key (Counter:"counters-12"), an encoded key or a chain id');
  if (wanted.length > MAX_SEARCH_LENGTH) throw new RangeError(`a search is at most ${MAX_SEARCH_LENGTH} characters`);
  const byKey: Array<{ key: Key; by: SearchReading }> = [];
  for (const key of attempt(() => reading.parse(wanted, scope.namespaces)) ?? []) byKey.push({ key, by: 'key' });
  const encoded = attempt(() => reading.decode(wanted));
  if (encoded) byKey.push({ key: encoded, by: 'encoded key' });
  const [direct, chained] = await Promise.all([
    lookUp(reads, byKey),
    CHAIN_ID.test(wanted) && reads.findsKeys ? byChain(reads, wanted, scope) : Promise.resolve([]),
  ]);
  const seen = new Set<string>();
  return [...direct, ...chained].filter((m) => {
    const id = keyIdentity(m.key);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

async function lookUp(reads: StoreReads, wanted: ReadonlyArray<{ key: Key; by: SearchReading }>): Promise<SearchMatch[]> {
  if (wanted.length === 0) return [];
  const found = await reads.getMany(wanted.map((w) => w.key));
  return wanted.flatMap((w, i) => (found[i] ? [{ key: w.key, properties: found[i]!, by: w.by }] : []));
}

async function byChain(reads: StoreReads, chain: string, scope: SearchScope): Promise<SearchMatch[]> {
  const queries = scope.kinds.flatMap((kind) => scope.namespaces.map((namespace) => ({ kind, namespace })));
  const keys = (await Promise.all(queries.map((q) => reads.findKeys({ ...q, property: 'lock_chain', equals: chain, limit: CHAIN_MATCHES })))).flat();
  if (keys.length === 0) return [];
  const found = await reads.getMany(keys);
  // The query's index may lag a write: keep only entities whose chain is still the one searched.
  return keys.flatMap((key, i) => (found[i] && found[i]!.lock_chain === chain ? [{ key, properties: found[i]!, by: 'chain id' as const }] : []));
}

function attempt<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

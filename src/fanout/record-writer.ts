/**
 * Puts a fan-out's records in a transaction (docs/design.md, section 18): the header, a child's
 * record, a page record, a page's done mark, each under its key, with its properties
 * (`records.ts`) and the unindexed ones, the key encoder bound once. The parts that change a
 * record decide what it becomes (`transitions.ts` for the header); this is the one place that
 * writes it.
 */
import type { Key } from '@google-cloud/datastore';
import type { StoreTransaction } from '../types';
import { childKey, childProperties, doneKey, headerKey, headerProperties, pageKey, UNINDEXED, type ChildRecord, type Header } from './records';

/** Writes fan-out records with one key encoder (the Locker's, as `X-Lock-Key` encodes keys). */
export class FanOutWriter {
  constructor(private readonly encode: (key: Key) => string) {}

  /** Puts the header as given. */
  header(tx: StoreTransaction, h: Header): void {
    tx.put(headerKey(h.id, h.parent.namespace), headerProperties(h, this.encode), UNINDEXED);
  }

  /** Puts a child's record as given (in its entity's namespace, its parent's). */
  child(tx: StoreTransaction, c: ChildRecord): void {
    tx.put(childKey(c.id, c.key.namespace), childProperties(c, this.encode), UNINDEXED);
  }

  /** Puts page `n`'s record, listing `ids`. */
  page(tx: StoreTransaction, fanout: string, n: number, namespace: string | undefined, ids: readonly string[]): void {
    tx.put(pageKey(fanout, n, namespace), { fanout, ids: [...ids] }, UNINDEXED);
  }

  /** Puts page `n`'s done mark. */
  done(tx: StoreTransaction, fanout: string, n: number, namespace: string | undefined, at: Date): void {
    tx.put(doneKey(fanout, n, namespace), { fanout, page: n, at }, UNINDEXED);
  }
}

/**
 * The writer of the Locker whose dispatcher encodes keys (`parts.dispatcher`): made per operation
 * (a small object; no state is kept at module level), its encoder bound there.
 */
export function writerOf(parts: { readonly dispatcher: { encodeKey(key: Key): string } }): FanOutWriter {
  const { dispatcher } = parts;
  return new FanOutWriter((key) => dispatcher.encodeKey(key));
}

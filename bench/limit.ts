/**
 * The physical limit of a step and of a duplicate on this store: the round trips they cannot do
 * without, one after another, with nothing of the library's decisions in between. A step cannot
 * cost less than one lookup (to decide), two conditional commits (take the lease, finish the step)
 * and the HTTP round trip of its task; a first duplicate no less than one lookup and the round
 * trip. The commits are the store's own compare-and-swap (`replaceIfUnchanged`: one commit with
 * `Mutation.base_version`), so the limit runs on the same wire requests as a step.
 */
import type { Key } from '@google-cloud/datastore';
import type { Snapshot, Store } from '../src/types';
import { EXCLUDED } from './entities';
import type { Reply } from './server';

/** What the limits are measured with. */
export interface LimitTarget {
  store: Store;
  /** An HTTP round trip to a route that answers at once. */
  ping(): Promise<Reply>;
}

/** One lookup, two conditional commits and an HTTP round trip, in a step's order; `key` holds a scheduled step. */
export async function stepLimit(t: LimitTarget, key: Key): Promise<void> {
  const read = await t.store.read(key);
  if (!read) throw new Error('the step limit needs a seeded entity');
  await commitTwice(t, key, read);
  expectOk(await t.ping());
}

/** A step's two conditional commits on what was read: take the lease, finish the step. */
async function commitTwice(t: LimitTarget, key: Key, read: Snapshot): Promise<void> {
  const taken = await t.store.replaceIfUnchanged(key, read, { ...read.properties, lock_req: 'limit', lock_ts: new Date() }, EXCLUDED);
  if (!taken) throw new Error('the step limit met a conflict: its entity is written by nobody else');
  const finished = await t.store.replaceIfUnchanged(key, taken, { ...taken.properties, lock_req: '', lock_seq: 2, lock_state: 'complete', lock_ts: new Date() }, EXCLUDED);
  if (!finished) throw new Error('the step limit met a conflict on its second commit');
}

/**
 * The step limit with the step's first lookup as a step makes it since tasks are checked against
 * their ledger record (docs/concepts/security.md): the entity and the record `id` in one lookup
 * (`readWithLedger`), then the two commits and the HTTP round trip. Not the limit: the
 * benchmark shows both, so that what the record's read costs is told apart from the library's own.
 */
export async function stepLimitWithRecord(t: LimitTarget, key: Key, id: string): Promise<void> {
  if (!t.store.readWithLedger) throw new Error('the step limit with its record needs a store that reads both at once');
  const step = await t.store.readWithLedger(key, id);
  if (!step.snapshot || !step.record) throw new Error('the step limit with its record needs a seeded entity and record');
  await commitTwice(t, key, step.snapshot);
  expectOk(await t.ping());
}

/** One lookup and an HTTP round trip: the least a first duplicate can cost. */
export async function duplicateLimit(t: LimitTarget, key: Key): Promise<void> {
  await t.store.read(key);
  expectOk(await t.ping());
}

function expectOk(reply: Reply): void {
  if (reply.status !== 200) throw new Error(`the empty route answered ${reply.status}`);
}

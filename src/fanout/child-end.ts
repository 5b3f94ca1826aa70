/**
 * How a fan-out child's chain ended, as its entity's lock says (docs/design.md, section 18): read by
 * the settle, the sweep's repair and an operator's cancel; and the settle a kickoff makes before it
 * replaces an ended child chain's lock. Imports nothing of the fan-out's reading parts, so the
 * chain's kickoff (`chain/next-step.ts`) can use it.
 */
import type { Key } from '@google-cloud/datastore';
import { decodeKey } from '../keys/key-codec';
import { readLock, type Lock } from '../rules/lock-fields';
import type { Locks } from '../locks/locks';
import { StepState, type Properties, type StoreTransaction } from '../types';
import { childKey, fanOutOfChain, readChild, type ChildState } from './records';
import { FanOutWriter } from './record-writer';

/** How a child's chain ended. */
export type ChildEnd = { state: Exclude<ChildState, 'pending' | 'timedOut'>; error?: string };

/**
 * How a child's chain ended, read from its entity; undefined while it is still live. A kickoff
 * that replaces an ended child chain settles the child from that chain's lock first
 * ({@link settleReplacedInTx}), so an entity that runs another chain now says nothing of how the
 * child's ended: only a child whose chain was replaced outside the Locker is reported failed here.
 */
export function childEnd(props: Properties | undefined, chain: string): ChildEnd | undefined {
  if (!props) return { state: 'failed', error: 'the child\'s entity was deleted before its chain ended' };
  const lock = readLock(props);
  if (lock.chain !== chain) return { state: 'failed', error: `another chain (${lock.chain ?? 'none'}) replaced the child's chain before it settled, and nothing recorded how it ended` };
  return lockEnd(lock);
}

/** How the chain holding `lock` ended; undefined while it is live. */
export function lockEnd(lock: Lock): ChildEnd | undefined {
  if (lock.state === StepState.complete) return { state: 'succeeded' };
  if (lock.state === StepState.failed) return { state: 'failed', error: lock.err ?? 'the step failed for good' };
  if (lock.state === StepState.cancelled) return { state: 'cancelled', error: 'an operator cancelled the child\'s chain' };
  return undefined;
}

/**
 * Before a kickoff replaces the lock `from` on `key`'s entity, in its transaction `tx`: when `from`
 * is a fan-out child's chain that ended, the child's record, still pending (its own settle was
 * lost), is settled from it, so the child is reported as its chain ended, not as replaced. The
 * completion check is left to the sweep (the settle it repairs was lost anyway).
 */
export async function settleReplacedInTx(tx: StoreTransaction, key: Key, from: Lock, now: Date, encode: (key: Key) => string): Promise<void> {
  const chain = from.chain;
  const end = fanOutOfChain(chain) ? lockEnd(from) : undefined;
  if (!end) return;
  const child = readChild(chain!, await tx.get(childKey(chain!, key.namespace)), decodeKey);
  if (child?.state !== 'pending') return;
  new FanOutWriter(encode).child(tx, { ...child, ...end, settledAt: now });
}


/** {@link settleReplacedInTx} in a transaction of its own, for a batch kickoff (a failure is left to the sweep). */
export async function settleReplaced(parts: { readonly locks: Pick<Locks, 'transact'>; readonly config: { readonly clock: () => number } }, key: Key, from: Lock, encode: (key: Key) => string): Promise<void> {
  if (!fanOutOfChain(from.chain) || !lockEnd(from)) return;
  const now = new Date(parts.config.clock());
  await parts.locks.transact((tx) => settleReplacedInTx(tx, key, from, now, encode)).catch(() => undefined);
}

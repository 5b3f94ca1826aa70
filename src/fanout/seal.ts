/**
 * The seal (docs/design.md, section 18): the parent's step finishes by fanning out. In one
 * transaction, fenced on the parent's lease: the header `writing` -> `sealed` (with its page and
 * child counts, its deadline, and when the sweep first looks at it), and the parent's lock moved to
 * the join step, scheduled but with no ledger record and no task yet, so nothing runs it and a
 * kickoff on the parent finds its chain busy. The join's record is written by the join's trigger.
 */
import type { Key } from '@google-cloud/datastore';
import { endStepAlerts } from '../rules/alert-markers';
import type { Lock } from '../rules/lock-fields';
import { scheduledStep } from '../rules/ledger-record';
import type { Properties, StoreTransaction } from '../types';
import type { FanOutPolicy } from './policy';
import type { FanParts } from './read-children';
import { headerKey, headerProperties, UNINDEXED, type Header } from './records';

/** Writes the seal in `tx` on the parent read as `props`/`lock`; returns the parent's lock as written. */
export function sealInTx(
  parts: FanParts, tx: StoreTransaction, key: Key, props: Properties, lock: Lock, header: Header, own: Properties, sent: readonly string[], now: Date,
): Lock {
  const planned = endStepAlerts(parts.config, scheduledStep(key, lock, header.chain, {
    path: header.path, body: header.body, scheduleTime: undefined, stallAfter: parts.config.stallAfter,
  }, now), lock, sent, now);
  parts.locks.put(tx, key, props, planned.lock, own);
  if (lock.task !== undefined) tx.deleteLedger(key, lock.task); // the fanning-out step moved on: its record goes
  const policy = JSON.parse(header.policy) as FanOutPolicy;
  const sealed: Header = { ...header, state: 'sealed', sealedAt: now, due: new Date(now.getTime() + parts.config.stallAfter) };
  if (policy.deadlineMs !== undefined) {
    sealed.deadline = new Date(now.getTime() + policy.deadlineMs);
    if (sealed.deadline.getTime() < sealed.due!.getTime()) sealed.due = sealed.deadline;
  }
  tx.put(headerKey(header.id, key.namespace), headerProperties(sealed, (k) => parts.dispatcher.encodeKey(k)), UNINDEXED);
  return planned.lock;
}

/** Whether the parent's lock is the seal's own, already written (its answer was lost). */
export function sealedBy(lock: Lock, header: Header): boolean {
  return lock.chain === header.chain && lock.seq === header.seq + 1 && lock.task === header.joinTask;
}

/**
 * The seal (docs/design.md, section 18): the parent's step finishes by fanning out. In one
 * transaction, fenced on the parent's lease: the header `writing` -> `sealed` (with its page and
 * child counts, its deadline, and when the sweep first looks at it), and the parent's lock moved to
 * the join step, scheduled but with no ledger record and no task yet, so nothing runs it and a
 * kickoff on the parent finds its chain busy. The join's record is written by the join's trigger.
 *
 * The fanning-out step's own record goes, as any finished step's does, unless the step ends with
 * alerts claimed and not yet sent (an overwrite while the alerter was down): the seal keeps them on
 * the lock, and keeps the record too, due within the alert grace, so the sweep finds them (it finds
 * owed alerts only through records) and sends them, whatever becomes of the join (cancelled,
 * days away). The kept record is never delivered again: its step is behind the lock's, so the sweep
 * only sends the alerts and then clears it.
 */
import type { Key } from '@google-cloud/datastore';
import { alertGrace, endStepAlerts } from '../rules/alert-markers';
import type { Lock } from '../rules/lock-fields';
import { scheduledStep } from '../rules/ledger-record';
import type { Properties, StoreTransaction } from '../types';
import type { FanOutPolicy } from './policy';
import type { FanParts } from './read-children';
import { writerOf } from './record-writer';
import type { Header } from './records';
import { seal } from './transitions';

/** Writes the seal in `tx` on the parent read as `props`/`lock`; resolves to the parent's lock as written. */
export async function sealInTx(
  parts: FanParts, tx: StoreTransaction, key: Key, props: Properties, lock: Lock, header: Header, own: Properties, sent: readonly string[], now: Date,
): Promise<Lock> {
  const planned = endStepAlerts(parts.config, scheduledStep(key, lock, header.chain, {
    path: header.path, body: header.body, scheduleTime: undefined, stallAfter: parts.config.stallAfter,
  }, now), lock, sent, now);
  parts.locks.put(tx, key, props, planned.lock, own);
  if (lock.task !== undefined) await endRecord(parts, tx, key, lock.task, planned.lock.alerts.length > 0, now);
  const policy = JSON.parse(header.policy) as FanOutPolicy;
  writerOf(parts).header(tx, seal(header, {
    now, pages: header.pages, total: header.total, stallAfter: parts.config.stallAfter, deadlineMs: policy.deadlineMs,
  }));
  return planned.lock;
}

/** The fanning-out step moved on: its record goes, or stays (due within the grace) while alerts it claimed are owed. */
async function endRecord(parts: FanParts, tx: StoreTransaction, key: Key, task: string, owed: boolean, now: Date): Promise<void> {
  const record = owed ? await tx.getLedger(key, task) : undefined;
  const soon = now.getTime() + alertGrace(parts.config);
  if (record) tx.putLedger({ ...record, due: new Date(Math.min(record.due.getTime(), soon)) });
  else tx.deleteLedger(key, task);
}

/** Whether the parent's lock is the seal's own, already written (its answer was lost). */
export function sealedBy(lock: Lock, header: Header): boolean {
  return lock.chain === header.chain && lock.seq === header.seq + 1 && lock.task === header.joinTask;
}

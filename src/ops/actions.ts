/**
 * The operator's actions on a chain: retry a failed step, cancel a chain, re-send the current
 * step. Each is fenced like every other write (a transaction that re-reads the entity and applies
 * the lock transition, which refuses a step in the wrong state; with `seq`, also a step that moved
 * on since the operator looked), then logged and emitted as an event.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Key } from '@google-cloud/datastore';
import type { Parts } from '../parts';
import { TransitionError } from '../errors/errors';
import { decodeKey, keyPath } from '../keys/key-codec';
import { childKey, fanOutId, fanOutOfChain, headerKey, readChild, readHeader, type Header } from '../fanout/records';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { Lock } from '../rules/lock-fields';
import { nextSend } from '../rules/ledger-record';
import { settleReplacedInTx } from '../fanout/child-end';
import { alerted, cancel, resend, retry } from '../rules/transitions';
import { ALERT_RULES, alertGrace, endStepAlerts, NO_ALERTS } from '../rules/alert-markers';
import type { LedgerRecord, Properties, StoreTransaction } from '../types';

/** What an operator's action reads of the configuration: the clock, the logger, when a record comes due, the alert rules. */
export const ACTION_SETTINGS = ['clock', 'logger', 'stallAfter', ...ALERT_RULES] as const satisfies readonly SettingName[];
export type ActionSettings = Settings<typeof ACTION_SETTINGS>;

/** The parts an operator's action uses, with its settings. */
export type ActionParts = Pick<Parts, 'locks' | 'emit' | 'dispatcher'> & { readonly config: ActionSettings };

/** What an action may be told about the step the operator saw. */
export interface ActionOptions {
  /** The step the operator saw: the action is refused (`TransitionError`) when the chain is at another step now. */
  seq?: number;
}

/**
 * A further check of a bulk operation's page on the step it acts on, inside the action's
 * transaction: a reason to leave the step alone (the action is then refused with it, as a
 * `TransitionError`), or undefined to go on. Handed the lock and, for retry and resend, the
 * step's ledger record.
 */
export type Guard = (lock: Lock, record?: LedgerRecord) => string | undefined;

/** Refuses the action when `guard` gives a reason. */
function check(guard: Guard | undefined, key: Key, lock: Lock, record?: LedgerRecord): void {
  const reason = guard?.(lock, record);
  if (reason !== undefined) throw new TransitionError(`${keyPath(key)}: ${reason}`);
}

/** Every option name of {@link ActionOptions}. */
export const ACTION_OPTION_NAMES: OptionNames<ActionOptions> = { seq: true };

/** What an action did. */
export interface ActionResult {
  /** The step acted on. */
  seq: number;
  /** The task created for it (retry, resend). */
  task?: string;
  /** Whether that task was created now (otherwise the sweep re-delivers the step). */
  sent?: boolean;
}

/** Cancels the chain on `key` at its current step: the step never runs, its tasks are dropped on arrival. */
export async function cancelChain(parts: ActionParts, key: Key, options: ActionOptions = {}, guard?: Guard): Promise<ActionResult> {
  rejectUnknownOptions('locker.cancel()', options, ACTION_OPTION_NAMES);
  const now = new Date(parts.config.clock());
  const seq = await parts.locks.update(key, async (tx, found) => {
    const lock = current(key, found?.lock, options);
    check(guard, key, lock);
    await cancelInTx(parts, tx, key, found!.props, lock, now);
    // A fan-out child's record is settled `cancelled` with the cancel, not left to the sweep's repair,
    // which reads the entity and would call the child `failed` once the app deleted or reused it.
    await settleReplacedInTx(tx, key, cancel(lock, { now }), now, (k) => parts.dispatcher.encodeKey(k));
    return lock.seq;
  });
  parts.emit('cancelled', { key, seq, attempt: '' });
  parts.config.logger.warn('chain cancelled by an operator', { key: keyPath(key), namespace: key.namespace, seq });
  return { seq };
}

/**
 * Writes the cancel of `lock` (read from `props`) in `tx`: the lock `cancelled`, and the step's
 * ledger record removed, unless alerts claimed on the lock are still unsent: then the sweep needs
 * it to find them, so it stays, due within the grace. Throws `TransitionError` unless a step is
 * scheduled or running.
 */
export async function cancelInTx(parts: ActionParts, tx: StoreTransaction, key: Key, props: Properties, lock: Lock, now: Date): Promise<void> {
  parts.locks.put(tx, key, props, cancel(lock, { now }));
  if (lock.task === undefined) return;
  const owed = endStepAlerts(parts.config, { lock: alerted(lock, { alerts: [] }) }, lock, NO_ALERTS, now).lock.alerts.length > 0;
  const record = owed ? await tx.getLedger(key, lock.task) : undefined;
  const soon = now.getTime() + alertGrace(parts.config);
  if (record) tx.putLedger({ ...record, due: new Date(Math.min(record.due.getTime(), soon)) });
  else tx.deleteLedger(key, lock.task);
}

/** The lock to act on: the entity must exist and, when `options.seq` is given, be at that step. */
export function current(key: Key, lock: Lock | undefined, options: ActionOptions): Lock {
  if (!lock) throw new TransitionError(`${keyPath(key)} does not exist`);
  if (options.seq !== undefined && lock.seq !== options.seq) {
    throw new TransitionError(`${keyPath(key)} is at step ${lock.seq} now, not step ${options.seq}: reload and look again`);
  }
  return lock;
}

/** Revives failed step `key` with a fresh retry budget, on a new task (see `Locker.retry`). */
export async function retryStep(parts: ActionParts, key: Key, options: ActionOptions = {}, guard?: Guard): Promise<ActionResult> {
  rejectUnknownOptions('locker.retry()', options, ACTION_OPTION_NAMES);
  const now = parts.config.clock();
  const record = await parts.locks.update(key, async (tx, entity) => {
    const lock = current(key, entity?.lock, options);
    check(guard, key, lock);
    await refuseSettledChild(tx, key, lock);
    const found = await ledgerOf(tx, key, lock);
    check(guard, key, lock, found);
    // lock_task keeps naming the record (found.id); alerts still unsent stay until someone sends them, the
    // retried step's own failure alert included: an operator retrying from the status page is not the
    // person the alert is for, and the promise is that every claimed alert reaches the alerter.
    const next = endStepAlerts(parts.config, { lock: retry(lock, { now: new Date(now) }) }, lock, NO_ALERTS, new Date(now)).lock;
    const claimed = nextSend(found, now, parts.config.stallAfter);
    parts.locks.put(tx, key, entity!.props, next);
    tx.putLedger(claimed);
    return claimed;
  });
  const sent = await parts.dispatcher.send(record);
  parts.emit('retried', { key, seq: record.seq, attempt: '', task: record.task });
  parts.config.logger.warn('failed step retried by an operator', { key: keyPath(key), namespace: key.namespace, seq: record.seq, task: record.task, sent });
  return { seq: record.seq, task: record.task, sent };
}

/** Re-delivers the current step of `key` now, on a new task (see `Locker.resend`). */
export async function resendStep(parts: ActionParts, key: Key, options: ActionOptions = {}, guard?: Guard): Promise<ActionResult> {
  rejectUnknownOptions('locker.resend()', options, ACTION_OPTION_NAMES);
  const now = parts.config.clock();
  const record = await parts.locks.update(key, async (tx, entity) => {
    const lock = current(key, entity?.lock, options);
    check(guard, key, lock);
    const found = await ledgerOf(tx, key, lock);
    check(guard, key, lock, found);
    resend(lock, { now: new Date(now) }); // refuses a step that is not scheduled; the lock itself is not written
    const claimed = nextSend(found, now, parts.config.stallAfter);
    tx.putLedger(claimed); // the transaction read the entity: a change to it since aborts this commit
    return claimed;
  });
  const sent = await parts.dispatcher.send(record);
  parts.emit('resent', { key, seq: record.seq, attempt: '', task: record.task, path: record.path, send: record.sends });
  parts.config.logger.warn('step re-sent by an operator', { key: keyPath(key), namespace: key.namespace, seq: record.seq, task: record.task, send: record.sends, sent });
  return { seq: record.seq, task: record.task, sent };
}

/** The ledger record of the lock's current step: its path and payload, which a new task needs. */
export async function ledgerOf(tx: StoreTransaction, key: Key, lock: Lock): Promise<LedgerRecord> {
  const found = lock.task === undefined ? undefined : await tx.getLedger(key, lock.task);
  if (!found || found.seq !== lock.seq) {
    const waiting = await waitingJoin(tx, key, lock);
    if (waiting) {
      throw new TransitionError(`${keyPath(key)} step ${lock.seq} is a fan-out's join: it waits for its fan-out's children (the fan-out is ${waiting.state}) and gets its task once they settled; act on the fan-out with cancelFanOut() or retryFanOutChildren()`);
    }
    throw new TransitionError(`${keyPath(key)} step ${lock.seq} has no ledger record (the task's path and payload), so no new task can be made for it; kick off a new chain instead`);
  }
  return found;
}

/** The fan-out whose join the lock waits at, before its trigger wrote the join's record; undefined when it waits at none. */
async function waitingJoin(tx: StoreTransaction, key: Key, lock: Lock): Promise<Header | undefined> {
  if (lock.chain === undefined || lock.task === undefined || lock.seq < 2) return undefined;
  const id = fanOutId(key, lock.chain, lock.seq - 1);
  const header = readHeader(id, await tx.get(headerKey(id, key.namespace)), decodeKey);
  return header && header.joinTask === lock.task && header.state !== 'joining' ? header : undefined;
}

/**
 * Refuses `locker.retry()` of a fan-out child whose record settled: its record would stay settled
 * (so `ctx.setResult()` throws, and the join never sees the retry); `retryFanOutChildren()` retries
 * it and reopens its record together.
 */
async function refuseSettledChild(tx: StoreTransaction, key: Key, lock: Lock): Promise<void> {
  if (fanOutOfChain(lock.chain) === undefined) return;
  const child = readChild(lock.chain!, await tx.get(childKey(lock.chain!, key.namespace)), decodeKey);
  if (!child || child.state === 'pending') return;
  throw new TransitionError(`${keyPath(key)} is a fan-out child that settled ${child.state}: retry it with locker.retryFanOutChildren(parent) while its fan-out waits, which reopens its record with it (once the join ran, its outcome is decided: start a new chain instead)`);
}

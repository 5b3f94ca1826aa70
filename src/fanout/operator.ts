/**
 * The operator's actions on a whole fan-out (docs/guides/fan-out.md, "Operators"): cancel it, with
 * or without its join, and retry its failed children before the join runs. Each decision is one
 * transaction on the parent that reads and writes the header, so it races the join's commit (which
 * also moves the header) safely: one of them commits, the other finds the header moved on.
 *
 * - `cancelFanOut()`: `writing` -> `cancelled` (the parent's step is cancelled too; the join cannot
 *   be asked for, since the fan-out was never sealed); `sealed` -> `cancelled`, then every pending
 *   child's chain is cancelled and its record settled `cancelled`; with `join`, the join is then
 *   committed from `cancelled` with the outcome `cancelled` (exactly once, and by the sweep if the
 *   process died first); without, the parent's chain is cancelled at the join step. `joining` (the
 *   join started) is refused: cancel the parent's chain instead.
 * - `retryFanOutChildren()`: while `sealed`, each child that failed for good is retried like
 *   `locker.retry()` and its record reopened `pending`, in one transaction with the header, whose
 *   `reopened` count it raises, so a join decided on children read before cannot commit, and with
 *   its page's done mark, which it deletes (the completion check reads that page again).
 */
import type { Key } from '@google-cloud/datastore';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import { TransitionError } from '../errors/errors';
import { endStepAlerts, NO_ALERTS } from '../rules/alert-markers';
import { cancelInTx, current, ledgerOf } from '../ops/actions';
import { nextSend } from '../rules/ledger-record';
import { readLock, type Lock } from '../rules/lock-fields';
import { retry } from '../rules/transitions';
import { decodeKey, keyPath } from '../keys/key-codec';
import { StepState, type LedgerRecord, type StoreTransaction } from '../types';
import { commitJoin } from './join-trigger';
import { allChildren, pagesFrom, type FanParts } from './read-children';
import { writerOf } from './record-writer';
import { childKey, doneKey, fanOutId, headerKey, readChild, readHeader, type ChildRecord, type FanOutState, type Header } from './records';
import { settleRecord } from './settle';
import { childEnd } from './child-end';
import { cancel as cancelHeader, may, reopen } from './transitions';

/** What `cancelFanOut()` may be told. */
export interface CancelFanOutOptions {
  /** Run the join once the children are cancelled, told the outcome `cancelled` (default false: the parent's chain is cancelled). */
  join?: boolean;
  /** The parent's step the operator saw: refused (`TransitionError`) when the parent is at another step now. */
  seq?: number;
}

/** Every option name of {@link CancelFanOutOptions}. */
export const CANCEL_FAN_OUT_OPTION_NAMES: OptionNames<CancelFanOutOptions> = { join: true, seq: true };

/** What `retryFanOutChildren()` may be told. */
export interface RetryFanOutOptions {
  /** The parent's step the operator saw: refused (`TransitionError`) when the parent is at another step now. */
  seq?: number;
}

/** Every option name of {@link RetryFanOutOptions}. */
export const RETRY_FAN_OUT_OPTION_NAMES: OptionNames<RetryFanOutOptions> = { seq: true };

/** A failed child `retryFanOutChildren()` could not retry; `K` is the store's key type. */
export interface SkippedChild<K = Key> {
  /** The child's entity. */
  key: K;
  /** Why it was not retried. */
  error: string;
}

/** What an operator's action on a fan-out did; `K` is the store's key type. */
export interface FanOutActionResult<K = Key> {
  /** The fan-out's id. */
  fanout: string;
  /** The header's state before the action. */
  was: FanOutState;
  /** Children acted on: cancelled (`cancelFanOut`) or retried (`retryFanOutChildren`). */
  children: number;
  /** Failed children that could not be retried (no failed chain of their own: busy, deleted, never started), with why. */
  skipped?: SkippedChild<K>[];
  /** Whether the join was committed by this call (`cancelFanOut` with `join`). */
  joined?: boolean;
}


/**
 * The fan-out of the parent whose lock is `lock`: the one its step is writing, else the one it waits
 * on (at the join step). The step's own comes first: a join that fans out again is at the first
 * fan-out's join step and writing its own, and the first one, joined, is no longer the one to act on.
 */
export async function findHeader(tx: StoreTransaction, key: Key, lock: Lock): Promise<Header | undefined> {
  if (lock.chain === undefined) return undefined;
  for (const seq of [lock.seq, lock.seq - 1]) {
    if (seq < 1) continue;
    const id = fanOutId(key, lock.chain, seq);
    const header = readHeader(id, await tx.get(headerKey(id, key.namespace)), decodeKey);
    if (header && (seq === lock.seq || lock.task === header.joinTask || header.state !== 'writing')) return header;
  }
  return undefined;
}

/** Cancels the fan-out the parent `key` waits on (or is writing); see the file's comment. */
export async function cancelFanOut(parts: FanParts, key: Key, options: CancelFanOutOptions = {}): Promise<FanOutActionResult> {
  rejectUnknownOptions('locker.cancelFanOut()', options, CANCEL_FAN_OUT_OPTION_NAMES);
  const join = options.join === true;
  const now = new Date(parts.config.clock());
  const decided = await parts.locks.transaction(key, async (tx) => {
    const props = await tx.get(key);
    const lock = current(key, props === undefined ? undefined : readLock(props), options.seq === undefined ? {} : { seq: options.seq });
    const header = await findHeader(tx, key, lock);
    if (!header) throw new TransitionError(`${keyPath(key)} step ${lock.seq} has no fan-out to cancel`);
    if (header.state === 'joining') {
      throw new TransitionError(`${keyPath(key)}: the fan-out's join already started (outcome ${header.outcome ?? '?'}); cancel the parent's chain with cancel() instead`);
    }
    if (header.state === 'cancelled') {
      // A cancel that asked for the join and died before committing it is finished by a second call (or the sweep).
      if (header.cancelJoin === true && join) return { header, was: header.state, parentCancelled: undefined };
      throw new TransitionError(`${keyPath(key)}: the fan-out was already cancelled`);
    }
    if (header.state === 'writing' && join) {
      throw new TransitionError(`${keyPath(key)}: the fan-out is still being written (never sealed), so no join can run; cancel it without the join`);
    }
    const ownStep = header.state === 'writing' ? lock.seq === header.seq : lock.seq === header.seq + 1 && lock.task === header.joinTask;
    const parentCancelled = !join && lock.state === StepState.scheduled && ownStep;
    if (parentCancelled) await cancelInTx(parts, tx, key, props!, lock, now);
    // The sweep finishes cancelling the children (and commits the join, if asked for) if this call
    // dies first; not sooner than `stallAfter`: it would race the call.
    const next = cancelHeader(header, { now, join, stallAfter: parts.config.stallAfter });
    writerOf(parts).header(tx, next);
    return { header: next, was: header.state, parentCancelled: parentCancelled ? lock.seq : undefined };
  });
  const cancelled = await cancelChildren(parts, decided.header);
  const result: FanOutActionResult = { fanout: decided.header.id, was: decided.was, children: cancelled };
  parts.config.logger.warn('fan-out cancelled by an operator', { key: keyPath(key), namespace: key.namespace, fanout: decided.header.id, was: decided.was, join, children: cancelled });
  if (join) result.joined = await finishCancelledJoin(parts, decided.header) === 'joined';
  if (decided.parentCancelled !== undefined) parts.emit('cancelled', { key, seq: decided.parentCancelled, attempt: '' });
  return result;
}

/**
 * The children of a fan-out; one never sealed (its page count is not known yet) by its page records
 * in turn, until a window of absent ones (`pagesFrom()`).
 */
async function childrenSoFar(parts: FanParts, header: Header): Promise<ChildRecord[]> {
  if (header.pages > 0) return allChildren(parts, header);
  return allChildren(parts, { ...header, pages: await pagesFrom(parts, header.id, header.parent.namespace, 0) });
}

/** Commits the join of a fan-out cancelled with `join`, on its children as they are now. */
export async function finishCancelledJoin(parts: FanParts, header: Header): Promise<string> {
  return commitJoin(parts, header, await allChildren(parts, header), new Date(parts.config.clock()), true);
}

/**
 * Cancels the chain of each pending child (only while it is still that child's chain) and settles
 * its record: `cancelled` (with `why`), or how its chain ended if it ended first. A child that fans
 * out itself (waiting at its own join, or still adding its children) has its own fan-out cancelled
 * with it, in the same transaction, and then its children in turn: a nested fan-out never outlives
 * the fan-out that started it. Returns how many of the children it found pending ended cancelled.
 */
export async function cancelChildren(parts: FanParts, header: Header, why = 'the fan-out was cancelled by an operator'): Promise<number> {
  const ns = header.parent.namespace;
  let settled = 0;
  for (const child of (await childrenSoFar(parts, header)).filter((c) => c.state === 'pending')) {
    const now = new Date(parts.config.clock());
    const cancelled = await parts.locks.transaction(child.key, async (tx) => {
      const props = await tx.get(child.key);
      const lock = props ? readLock(props) : undefined;
      // Not its chain (yet): a child whose kickoff is still to come (an attempt adding children raced
      // the cancel) settles `cancelled` too; its chain, if it starts, runs on its own and changes nothing.
      if (!props || !lock || lock.chain !== child.id) return { nested: undefined };
      if (lock.state !== StepState.scheduled) return undefined;
      await cancelInTx(parts, tx, child.key, props, lock, now);
      return { nested: await cancelNestedInTx(parts, tx, child.key, lock, now) };
    });
    if (cancelled?.nested) await cancelChildren(parts, cancelled.nested, 'the fan-out of its parent\'s parent was cancelled');
    // Cancelled here: settled with why; else as its chain ended (or its entity went).
    const end = cancelled ? undefined : childEnd(await parts.reads.get(child.key), child.id);
    await settleRecord(parts, child.id, ns, end?.state ?? 'cancelled', end?.error ?? why);
    // Counted when it ended cancelled, whoever settled it: the sweep finishing a cancel may race a long call.
    if ((end?.state ?? 'cancelled') === 'cancelled') settled++;
  }
  return settled;
}

/**
 * In the transaction that cancels a child's chain: the child's own fan-out (the one it waits on or
 * is writing), moved to `cancelled` without a join. Its `due` lets the sweep finish cancelling its
 * children if this process dies first. Returns it, to cancel its children.
 */
async function cancelNestedInTx(parts: FanParts, tx: StoreTransaction, key: Key, lock: Lock, now: Date): Promise<Header | undefined> {
  const nested = await findHeader(tx, key, lock);
  if (!nested || !may('cancel', nested)) return undefined;
  const next = cancelHeader(nested, { now, join: false, stallAfter: parts.config.stallAfter });
  writerOf(parts).header(tx, next);
  return next;
}

/** Retries the failed children of the fan-out the parent `key` waits on, before its join; see the file's comment. */
export async function retryFanOutChildren(parts: FanParts, key: Key, options: RetryFanOutOptions = {}): Promise<FanOutActionResult> {
  rejectUnknownOptions('locker.retryFanOutChildren()', options, RETRY_FAN_OUT_OPTION_NAMES);
  const props = await parts.reads.get(key);
  const lock = current(key, props === undefined ? undefined : readLock(props), options);
  const header = await parts.locks.transact((tx) => findHeader(tx, key, lock));
  if (!header) throw new TransitionError(`${keyPath(key)} step ${lock.seq} has no fan-out`);
  if (header.state !== 'sealed') throw new TransitionError(`${keyPath(key)}: the fan-out is ${header.state}; failed children can only be retried while it waits for them (sealed)`);
  const write = writerOf(parts);
  const ns = key.namespace;
  const result: FanOutActionResult = { fanout: header.id, was: header.state, children: 0, skipped: [] };
  for (const failed of (await allChildren(parts, header)).filter((c) => c.state === 'failed')) {
    const now = parts.config.clock();
    let record: LedgerRecord | undefined;
    try {
      record = await parts.locks.transaction(failed.key, async (tx) => {
        const h = readHeader(header.id, await tx.get(headerKey(header.id, ns)), decodeKey);
        if (!h || h.state !== 'sealed') throw new TransitionError(`${keyPath(key)}: the fan-out is ${h?.state ?? 'gone'} now; its join was decided`);
        const child = readChild(failed.id, await tx.get(childKey(failed.id, ns)), decodeKey);
        if (!child || child.state !== 'failed') return undefined;
        const entity = await tx.get(failed.key);
        const childLock = entity ? readLock(entity) : undefined;
        if (!entity || !childLock || childLock.chain !== failed.id) throw new TransitionError(failed.error ?? 'the child has no failed chain of its own');
        const found = await ledgerOf(tx, failed.key, childLock);
        const revived = endStepAlerts(parts.config, { lock: retry(childLock, { now: new Date(now) }) }, childLock, NO_ALERTS, new Date(now)).lock;
        const claimed = nextSend(found, now, parts.config.stallAfter);
        parts.locks.put(tx, failed.key, entity, revived);
        tx.putLedger(claimed);
        const { error: _error, settledAt: _settledAt, ...reopened } = child;
        write.child(tx, { ...reopened, state: 'pending' });
        if (child.page !== undefined) tx.delete(doneKey(header.id, child.page, ns)); // its page is no longer done
        write.header(tx, reopen(h));
        return claimed;
      });
    } catch (error) {
      if (!(error instanceof TransitionError) || /its join was decided/.test(error.message)) throw error;
      result.skipped!.push({ key: failed.key, error: error.message });
      continue;
    }
    if (!record) continue;
    result.children++;
    const sent = await parts.dispatcher.send(record);
    parts.emit('retried', { key: failed.key, seq: record.seq, attempt: '', task: record.task });
    parts.config.logger.warn('failed fan-out child retried by an operator', { key: keyPath(failed.key), fanout: header.id, seq: record.seq, task: record.task, sent });
  }
  return result;
}

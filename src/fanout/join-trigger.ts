/**
 * The completion check and the join's trigger (docs/design.md, section 18). After a child settles,
 * after the seal, and from the sweep: is any child still pending? Everything is read by key
 * (strongly consistent on every store; no query, whose index lags on legacy Datastore), and a
 * settle reads a bounded amount however many children there are:
 *
 * 1. A settling child reads its own page's children (at most 100, `PAGE_SIZE`), those started just
 *    after it first. One pending: done (most checks end at the first read of a few).
 * 2. Once none is, the page is marked done (its `LockerFanOutDone` mark, written once, fenced on
 *    the header's `reopened` count), and the marks of every page are read; a page without one has
 *    its children read, and is marked when they all settled, up to the first page with a pending
 *    child. The seal and the sweep start here.
 * 3. Every page marked: every child record is read by key, and only then is the join committed:
 *    one transaction that moves the header `sealed` -> `joining` and writes the parent's ledger
 *    record for the join step.
 *
 * The last child of a page to settle sees its page done (its siblings' settles committed before it
 * read them), and the last page to be marked sees every other page's mark, so the check after the
 * last settle always commits. Racing last finishers, re-delivered children and the sweep all run
 * this; only the first commit moves the header, so the join is scheduled once.
 */
import { decodeKey } from '../keys/key-codec';
import { keyPath } from '../keys/key-codec';
import { newLedgerRecord } from '../rules/ledger-record';
import { readLock } from '../rules/lock-fields';
import { StepState, type LedgerRecord } from '../types';
import { checkPolicy, outcomeOf, type FanOutPolicy } from './policy';
import { allChildren, getChildren, getMany, pageIds, type FanParts } from './read-children';
import { writerOf } from './record-writer';
import { childKey, countStates, doneKey, headerKey, readHeader, type ChildRecord, type Header } from './records';
import { join, joinCancelled, may } from './transitions';

/** What a check found: still pending, not sealed (writing, or already joined or cancelled), or joined now. */
export type CheckResult = 'pending' | 'not-sealed' | 'joined' | 'lost';

/**
 * Runs the completion check of fan-out `id`; commits the join when every child settled (or its
 * deadline passed). `from`: the child that just settled and its page, whose siblings are read first.
 */
export async function checkJoin(parts: FanParts, id: string, namespace: string | undefined, from?: { page: number; child: string }): Promise<CheckResult> {
  const header = readHeader(id, await parts.reads.get(headerKey(id, namespace)), decodeKey);
  if (!header || header.state !== 'sealed') return 'not-sealed';
  const now = new Date(parts.config.clock());
  if (header.deadline !== undefined && header.deadline.getTime() <= now.getTime()) {
    let children = await allChildren(parts, header);
    const pending = children.filter((c) => c.state === 'pending');
    if (pending.length > 0) {
      await timeOut(parts, namespace, pending, now);
      children = await allChildren(parts, header);
    }
    return commitJoin(parts, header, children, now);
  }
  if (from !== undefined && from.page < header.pages && !await pageDone(parts, header, from.page, now, from.child)) return 'pending';
  const marks = await getMany(parts, Array.from({ length: header.pages }, (_, n) => doneKey(id, n, namespace)));
  for (let n = 0; n < header.pages; n++) {
    if (!marks[n] && !await pageDone(parts, header, n, now)) return 'pending';
  }
  const children = await allChildren(parts, header);
  // Every page was marked done; a child pending now was reopened by an operator since (its retry unmarks its page).
  if (children.some((c) => c.state === 'pending')) return 'pending';
  return commitJoin(parts, header, children, now);
}

/** Siblings a settling child reads first: those started just after it, most likely still pending. */
const FIRST_READ = 8;

/**
 * Whether every child page `n` lists settled (read by key, starting after `from`, the child that
 * just settled: most checks stop at the first read); if so, marks the page done, unless the fan-out
 * was reopened or moved on since `header` was read.
 */
async function pageDone(parts: FanParts, header: Header, n: number, now: Date, from?: string): Promise<boolean> {
  const ns = header.parent.namespace;
  const ids = await pageIds(parts, header.id, n, ns);
  const at = from === undefined ? -1 : ids.indexOf(from);
  const order = [...ids.slice(at + 1), ...ids.slice(0, at + 1)];
  for (const part of [order.slice(0, FIRST_READ), order.slice(FIRST_READ)]) {
    if (part.length > 0 && (await getChildren(parts, part, ns)).some((c) => c?.state === 'pending')) return false;
  }
  return parts.locks.transact(async (tx) => {
    const [stored, mark] = await Promise.all([tx.get(headerKey(header.id, ns)), tx.get(doneKey(header.id, n, ns))]);
    const current = readHeader(header.id, stored, decodeKey);
    if (current?.state !== 'sealed' || (current.reopened ?? 0) !== (header.reopened ?? 0)) return false;
    if (!mark) writerOf(parts).done(tx, header.id, n, ns, now);
    return true;
  });
}

/** Marks pending children `timedOut` (each in its own transaction, only while it is still pending). */
async function timeOut(parts: FanParts, namespace: string | undefined, pending: readonly ChildRecord[], now: Date): Promise<void> {
  for (const c of pending) {
    await parts.locks.transact(async (tx) => {
      const stored = await tx.get(childKey(c.id, namespace));
      if (!stored || stored.state !== 'pending') return;
      const record: ChildRecord = { ...c, state: 'timedOut', error: 'the fan-out\'s deadline passed before the child settled', settledAt: now };
      if (typeof stored.result === 'string') record.result = stored.result;
      writerOf(parts).child(tx, record);
    });
  }
}

/**
 * The join's commit: `sealed` -> `joining` with the outcome and counts, and the parent's ledger
 * record for the join step, in one transaction; then the join's task is sent. A parent no longer
 * waiting at the join step (cancelled by an operator) gets no record. With `cancelled`, the
 * operator's cancel that asked for the join commits it from `cancelled`, with the outcome
 * `cancelled` (`cancelFanOut()`).
 */
export async function commitJoin(parts: FanParts, header: Header, children: readonly ChildRecord[], now: Date, cancelled = false): Promise<CheckResult> {
  const counts = countStates(children);
  const policy = JSON.parse(header.policy) as FanOutPolicy;
  const outcome = cancelled ? 'cancelled' : outcomeOf(checkPolicy(policy), counts);
  const record = await parts.locks.transaction(header.parent, async (tx) => {
    const current = readHeader(header.id, await tx.get(headerKey(header.id, header.parent.namespace)), decodeKey);
    // A cancel that asked for the join commits it from `cancelled`, once; otherwise only a sealed fan-out
    // joins, and only on the children read after it was last reopened (a retried child reopens it).
    const from = cancelled ? current !== undefined && may('joinCancelled', current) : current !== undefined && may('join', current) && (current.reopened ?? 0) === (header.reopened ?? 0);
    if (!current || !from) return 'not-sealed' as const;
    const parent = await tx.get(header.parent);
    const lock = parent ? readLock(parent) : undefined;
    writerOf(parts).header(tx, cancelled ? joinCancelled(current, { now, counts }) : join(current, { now, outcome, counts }));
    const waiting = lock && lock.chain === header.chain && lock.seq === header.seq + 1 && lock.state === StepState.scheduled && lock.task === header.joinTask;
    if (!waiting) return 'lost' as const;
    const joinRecord = newLedgerRecord(header.parent, header.seq + 1, header.chain, {
      path: header.path, body: header.body, scheduleTime: undefined, stallAfter: parts.config.stallAfter,
    }, now);
    tx.putLedger(joinRecord);
    return joinRecord;
  });
  if (record === 'not-sealed') return 'not-sealed';
  if (record === 'lost') {
    parts.config.logger.warn('fan-out joined, but its parent no longer waits at the join step; no join runs', { fanout: header.id, parent: keyPath(header.parent) });
    return 'lost';
  }
  parts.config.logger.info('fan-out joined', { fanout: header.id, parent: keyPath(header.parent), outcome, ...counts });
  await send(parts, record);
  return 'joined';
}

async function send(parts: FanParts, record: LedgerRecord): Promise<void> {
  parts.emit('scheduled', { key: record.key, seq: record.seq, attempt: '', task: record.task, path: record.path });
  await parts.dispatcher.send(record);
}

/**
 * The completion check and the join's trigger (docs/design.md, section 18). After a child settles,
 * after the seal, and from the sweep: is any child still pending? One keys-only query with limit 1
 * says "yes" cheaply (confirmed by a key lookup of the child it found); when it finds none, every
 * child record is read by key (the query is eventually consistent on legacy Datastore), and only
 * then is the join committed: one transaction that moves the header `sealed` -> `joining` and
 * writes the parent's ledger record for the join step. Racing last finishers, re-delivered
 * children and the sweep all run this; only the first commit moves the header, so the join is
 * scheduled once.
 */
import { decodeKey } from '../store/key-codec';
import { keyPath } from '../store/key-codec';
import { newLedgerRecord } from '../rules/ledger-record';
import { readLock } from '../rules/lock-fields';
import { StepState, type LedgerRecord } from '../types';
import { checkPolicy, outcomeOf, type FanOutPolicy } from './policy';
import { allChildren, getChildren, type FanParts } from './read-children';
import {
  CHILD_KIND, childKey, childProperties, countStates, headerKey, headerProperties, readHeader, UNINDEXED, type ChildRecord, type Header,
} from './records';

/** What a check found: still pending, not sealed (writing, or already joined or cancelled), or joined now. */
export type CheckResult = 'pending' | 'not-sealed' | 'joined' | 'lost';

/** Runs the completion check of fan-out `id`; commits the join when every child settled (or its deadline passed). */
export async function checkJoin(parts: FanParts, id: string, namespace: string | undefined): Promise<CheckResult> {
  const header = readHeader(id, await parts.reads.get(headerKey(id, namespace)), decodeKey);
  if (!header || header.state !== 'sealed') return 'not-sealed';
  const now = new Date(parts.config.clock());
  const pastDeadline = header.deadline !== undefined && header.deadline.getTime() <= now.getTime();
  if (!pastDeadline && parts.reads.findsKeys) {
    const found = await parts.reads.findKeys({ kind: CHILD_KIND, namespace: namespace ?? '', property: 'open', equals: id, limit: 1 });
    if (found.length > 0) {
      const [child] = await getChildren(parts, [found[0]!.name!], namespace);
      // The index may lag a settle (legacy Datastore): a child found settled proves nothing; read them all.
      if (!child || child.state === 'pending') return 'pending';
    }
  }
  let children = await allChildren(parts, header);
  if (children.some((c) => c.state === 'pending')) {
    if (!pastDeadline) return 'pending';
    await timeOut(parts, namespace, children.filter((c) => c.state === 'pending'), now);
    children = await allChildren(parts, header);
  }
  return commitJoin(parts, header, children, now);
}

/** Marks pending children `timedOut` (each in its own transaction, only while it is still pending). */
async function timeOut(parts: FanParts, namespace: string | undefined, pending: readonly ChildRecord[], now: Date): Promise<void> {
  for (const c of pending) {
    await parts.locks.transact(async (tx) => {
      const stored = await tx.get(childKey(c.id, namespace));
      if (!stored || stored.state !== 'pending') return;
      const record: ChildRecord = { ...c, state: 'timedOut', error: 'the fan-out\'s deadline passed before the child settled', settledAt: now };
      if (typeof stored.result === 'string') record.result = stored.result;
      tx.put(childKey(c.id, namespace), childProperties(record, (k) => parts.dispatcher.encodeKey(k)), UNINDEXED);
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
  const encode = (k: Parameters<typeof parts.dispatcher.encodeKey>[0]): string => parts.dispatcher.encodeKey(k);
  const record = await parts.locks.transaction(header.parent, async (tx) => {
    const current = readHeader(header.id, await tx.get(headerKey(header.id, header.parent.namespace)), decodeKey);
    // A cancel that asked for the join commits it from `cancelled`, once; otherwise only a sealed fan-out
    // joins, and only on the children read after it was last reopened (a retried child reopens it).
    const from = cancelled ? current?.state === 'cancelled' && current.cancelJoin === true : current?.state === 'sealed' && (current.reopened ?? 0) === (header.reopened ?? 0);
    if (!current || !from) return 'not-sealed' as const;
    const parent = await tx.get(header.parent);
    const lock = parent ? readLock(parent) : undefined;
    const { due: _due, ...rest } = current;
    tx.put(headerKey(header.id, header.parent.namespace), headerProperties({ ...rest, state: 'joining', outcome, counts, joinedAt: now }, encode), UNINDEXED);
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

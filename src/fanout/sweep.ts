/**
 * The fan-out part of `sweep()` (docs/design.md, section 18): sealed fan-outs whose `due` passed
 * (one keys-only query on the header's `due`). For each, children still pending whose chain ended
 * without settling (the process died between the two, the entity was deleted, an operator
 * cancelled the child's chain) are settled from their entity; then the completion check runs
 * (which also times out pending children once the deadline passed). A fan-out still waiting is
 * looked at again `stallAfter` later. A fan-out an operator cancelled asking for the join, whose
 * call died before the join was committed, has its children cancelled and its join committed here.
 */
import { decodeKey, keyPath } from '../store/key-codec';
import { checkJoin } from './join-trigger';
import { cancelChildren, finishCancelledJoin } from './operator';
import { allChildren, getChildren, type FanParts } from './read-children';
import { CHILD_KIND, HEADER_KIND, headerKey, headerProperties, readHeader, UNINDEXED, type ChildRecord, type Header } from './records';
import { childEnd, settleRecord } from './settle';

/** What the fan-out sweep did. */
export interface FanOutSweep {
  /** Fan-outs looked at. */
  looked: number;
  /** Children settled from their entity (their own settle was lost). */
  repaired: number;
  /** Fan-outs whose join this sweep committed. */
  joined: number;
}

/** Sweeps the due fan-outs, at most `limit`. */
export async function sweepFanOuts(parts: FanParts, limit: number): Promise<FanOutSweep> {
  const { clock, logger } = parts.config;
  const result: FanOutSweep = { looked: 0, repaired: 0, joined: 0 };
  if (!parts.reads.findsKeys) return result;
  const keys = await parts.reads.findKeys({ kind: HEADER_KIND, property: 'due', atOrBefore: new Date(clock()), limit: Math.min(limit, 1000) });
  for (const key of keys) {
    const id = key.name!;
    try {
      result.looked++;
      const header = readHeader(id, await parts.reads.get(key), decodeKey);
      if (!header) continue;
      if (header.state === 'sealed') {
        result.repaired += await repair(parts, header);
        if (await checkJoin(parts, id, key.namespace) === 'joined') result.joined++;
      } else if (header.state === 'cancelled' && header.cancelJoin === true) {
        // An operator's cancel asked for the join and died before committing it: finish it.
        await cancelChildren(parts, header);
        if (await finishCancelledJoin(parts, header) === 'joined') result.joined++;
      }
      await postpone(parts, id, key.namespace);
    } catch (error) {
      logger.warn('fan-out not swept; the next sweep tries again', { fanout: id, error: String(error) });
    }
  }
  if (result.repaired + result.joined > 0) logger.info('fan-outs swept', { ...result });
  return result;
}

/** Settles the pending children whose chain ended; returns how many. */
async function repair(parts: FanParts, header: Header): Promise<number> {
  // The pending ones, by the query; then all by key when it finds none (the index may lag).
  const ns = header.parent.namespace;
  const found = await parts.reads.findKeys({ kind: CHILD_KIND, namespace: ns ?? '', property: 'open', equals: header.id, limit: 1000 });
  let pending: ChildRecord[] = (await getChildren(parts, found.map((k) => k.name!), ns)).filter((c): c is ChildRecord => c?.state === 'pending');
  if (pending.length === 0) pending = (await allChildren(parts, header)).filter((c) => c.state === 'pending');
  let repaired = 0;
  for (const child of pending) {
    const end = childEnd(await parts.reads.get(child.key), child.id);
    if (end && await settleRecord(parts, child.id, ns, end.state, end.error)) {
      repaired++;
      parts.config.logger.warn('fan-out child settled by the sweep', { fanout: header.id, key: keyPath(child.key), state: end.state });
    }
  }
  return repaired;
}

/** Moves a fan-out's `due` on (`stallAfter`, or its deadline if sooner); removes it once it is no longer sealed (or cancelled with its join still to commit). */
async function postpone(parts: FanParts, id: string, namespace: string | undefined): Promise<void> {
  const now = parts.config.clock();
  await parts.locks.transact(async (tx) => {
    const header = readHeader(id, await tx.get(headerKey(id, namespace)), decodeKey);
    if (!header) return;
    const { due: _due, ...rest } = header;
    const next: Header = rest;
    if (header.state === 'sealed' || (header.state === 'cancelled' && header.cancelJoin === true)) {
      const at = now + parts.config.stallAfter;
      next.due = new Date(header.deadline && header.deadline.getTime() > now ? Math.min(at, header.deadline.getTime()) : at);
    }
    tx.put(headerKey(id, namespace), headerProperties(next, (k) => parts.dispatcher.encodeKey(k)), UNINDEXED);
  });
}

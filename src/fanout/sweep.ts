/**
 * The fan-out part of `sweep()` (docs/design.md, section 18): fan-outs whose `due` passed (one
 * keys-only query on the header's `due`).
 *
 * - Sealed: children still pending (read by key from the pages not marked done) whose chain ended without settling (the process died between
 *   the two, the entity was deleted, an operator cancelled the child's chain) are settled from
 *   their entity; then the completion check runs (which also times out pending children once the
 *   deadline passed). Looked at again `stallAfter` later while it waits.
 * - Writing: a fan-out whose parent abandoned it is cancelled with its children (`abandon.ts`); one
 *   whose parent is still at its step (running, re-delivered, or failed for good and waiting for an
 *   operator's retry) is looked at again `stallAfter` later.
 * - Cancelled with its cancel unfinished (the operator's call, or the sweep, died part-way): its
 *   pending children are cancelled, and the join committed when the cancel asked for it.
 */
import { decodeKey, keyPath } from '../keys/key-codec';
import { abandonIfOrphaned } from './abandon';
import { checkJoin } from './join-trigger';
import { cancelChildren, finishCancelledJoin } from './operator';
import { getMany, pendingChildren, type FanParts } from './read-children';
import { writerOf } from './record-writer';
import { HEADER_KIND, headerKey, readHeader, type Header } from './records';
import { settleRecord } from './settle';
import { childEnd } from './child-end';
import { postpone as postponed } from './transitions';

/** What the fan-out sweep did. */
export interface FanOutSweep {
  /** Fan-outs looked at. */
  looked: number;
  /** Children settled from their entity (their own settle was lost). */
  repaired: number;
  /** Fan-outs whose join this sweep committed. */
  joined: number;
  /** Fan-outs left `writing` by a parent that abandoned them, cancelled now. */
  abandoned: number;
}

/** Sweeps the due fan-outs, at most `limit`. */
export async function sweepFanOuts(parts: FanParts, limit: number): Promise<FanOutSweep> {
  const { clock, logger } = parts.config;
  const result: FanOutSweep = { looked: 0, repaired: 0, joined: 0, abandoned: 0 };
  if (!parts.reads.findsKeys) return result;
  const keys = await parts.reads.findKeys({ kind: HEADER_KIND, property: 'due', atOrBefore: new Date(clock()), limit: Math.min(limit, 1000) });
  for (const key of keys) {
    const id = key.name!;
    try {
      result.looked++;
      let settled = 0;
      const header = readHeader(id, await parts.reads.get(key), decodeKey);
      if (!header) continue;
      if (header.state === 'sealed') {
        result.repaired += await repair(parts, header);
        if (await checkJoin(parts, id, key.namespace) === 'joined') result.joined++;
      } else if (header.state === 'writing') {
        const abandoned = await abandonIfOrphaned(parts, id, header);
        if (abandoned) {
          result.abandoned++;
          settled = 1 + await cancelChildren(parts, abandoned, `the fan-out was abandoned: ${abandoned.reason ?? ''}`);
        }
      } else if (header.state === 'cancelled') {
        // A cancel not finished (the call died part-way): cancel what is still pending, and commit the join if it asked for one.
        settled = await cancelChildren(parts, header, header.reason === undefined ? undefined : `the fan-out was abandoned: ${header.reason}`);
        if (header.cancelJoin === true && await finishCancelledJoin(parts, header) === 'joined') result.joined++;
      }
      await postpone(parts, id, key.namespace, settled);
    } catch (error) {
      logger.warn('fan-out not swept; the next sweep tries again', { fanout: id, error: String(error) });
    }
  }
  if (result.repaired + result.joined + result.abandoned > 0) logger.info('fan-outs swept', { ...result });
  return result;
}

/** Settles the pending children whose chain ended; returns how many. */
async function repair(parts: FanParts, header: Header): Promise<number> {
  // The pending ones, by key, from the pages not marked done.
  const ns = header.parent.namespace;
  const pending = await pendingChildren(parts, header);
  const entities = await getMany(parts, pending.map((c) => c.key));
  let repaired = 0;
  for (const [i, child] of pending.entries()) {
    const end = childEnd(entities[i], child.id);
    if (end && await settleRecord(parts, child.id, ns, end.state, end.error)) {
      repaired++;
      parts.config.logger.warn('fan-out child settled by the sweep', { fanout: header.id, key: keyPath(child.key), state: end.state });
    }
  }
  return repaired;
}

/**
 * Moves a fan-out's `due` on (`stallAfter`, or its deadline if sooner); removes it once it is no
 * longer writing or sealed, except a cancelled one whose join is still to commit or whose children
 * this sweep still found pending (`settled` > 0: an attempt adding children may have raced the
 * cancel, so the next sweep looks again).
 */
async function postpone(parts: FanParts, id: string, namespace: string | undefined, settled: number): Promise<void> {
  const now = new Date(parts.config.clock());
  await parts.locks.transact(async (tx) => {
    const header = readHeader(id, await tx.get(headerKey(id, namespace)), decodeKey);
    if (header) writerOf(parts).header(tx, postponed(header, { now, stallAfter: parts.config.stallAfter, pending: settled }));
  });
}

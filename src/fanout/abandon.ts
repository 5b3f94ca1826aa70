/**
 * A fan-out left `writing` (docs/design.md, section 18): its parent's step started adding children
 * and never sealed. The sweep looks at such a header once its `due` passed and decides by the
 * parent's lock, in one transaction on the parent:
 *
 * - the parent is still at the fanning-out step of the same chain, scheduled (its attempt runs, or
 *   will be re-delivered) or failed for good within the time its ledger record is kept for a retry
 *   (`FAILED_RECORD_RETENTION_MS`, 30 days: parked, and `locker.retry()` resumes adding children and
 *   seals, and the join then sees every child, those that ended meanwhile included): the fan-out
 *   waits, looked at again `stallAfter` later;
 * - failed for good longer ago than that: the sweep removes the step's record, so no retry can
 *   resume it; the fan-out is abandoned as below;
 * - otherwise the parent abandoned it (its chain was cancelled or replaced, its entity deleted):
 *   no seal can ever be written (the seal is fenced on the parent's step), so no join can run. The
 *   header moves to `cancelled`, with why, and the children started so far are cancelled as by
 *   `cancelFanOut()`.
 */
import { readLock } from '../rules/lock-fields';
import { FAILED_RECORD_RETENTION_MS } from '../rules/stall';
import { decodeKey, keyPath } from '../keys/key-codec';
import { StepState, type Properties } from '../types';
import type { FanParts } from './read-children';
import { writerOf } from './record-writer';
import { headerKey, readHeader, type Header } from './records';
import { abandon, may } from './transitions';

/** Why the parent no longer owns the `writing` fan-out `header` at `now`; undefined while it does (live or parked at that step). */
export function abandonedBy(parent: Properties | undefined, header: Header, now: number): string | undefined {
  if (!parent) return 'its parent entity was deleted before the fan-out was sealed';
  const lock = readLock(parent);
  if (lock.chain !== header.chain) return `another chain (${lock.chain ?? 'none'}) replaced its parent's chain before the fan-out was sealed`;
  if (lock.seq !== header.seq) return `its parent's chain moved to step ${lock.seq} without sealing it`;
  if (lock.state === StepState.scheduled) return undefined;
  if (lock.state === StepState.failed) {
    if (now < (lock.ts?.getTime() ?? 0) + FAILED_RECORD_RETENTION_MS) return undefined;
    return 'its parent\'s step failed for good more than 30 days before, and its record (which a retry needs) is gone, so no retry can seal it';
  }
  return `its parent's step was ${lock.state} before the fan-out was sealed`;
}

/**
 * Moves a `writing` fan-out whose parent abandoned it to `cancelled` (with `due`, so the sweep
 * cancels its children, now and again if it dies first). Returns the header as written, or
 * undefined when the parent still owns it (or it is no longer `writing`).
 */
export async function abandonIfOrphaned(parts: FanParts, id: string, header: Header): Promise<Header | undefined> {
  const now = new Date(parts.config.clock());
  const abandoned = await parts.locks.transaction(header.parent, async (tx) => {
    const current = readHeader(id, await tx.get(headerKey(id, header.parent.namespace)), decodeKey);
    if (!current || !may('abandon', current)) return undefined;
    const why = abandonedBy(await tx.get(header.parent), current, now.getTime());
    if (why === undefined) return undefined;
    const next = abandon(current, { now, reason: why });
    writerOf(parts).header(tx, next);
    return next;
  });
  if (abandoned) parts.config.logger.warn('fan-out abandoned by its parent before its seal; its children are cancelled', { fanout: id, parent: keyPath(header.parent), why: abandoned.reason });
  return abandoned;
}

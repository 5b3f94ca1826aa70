/**
 * A fan-out left `writing` (docs/design.md, section 18): its parent's step started adding children
 * and never sealed. The sweep looks at such a header once its `due` passed and decides by the
 * parent's lock, in one transaction on the parent:
 *
 * - the parent is still at the fanning-out step of the same chain, scheduled (its attempt runs, or
 *   will be re-delivered) or failed for good (parked: `locker.retry()` resumes adding children and
 *   seals, and the join then sees every child, those that ended meanwhile included): the fan-out
 *   waits, looked at again `stallAfter` later;
 * - otherwise the parent abandoned it (its chain was cancelled or replaced, its entity deleted):
 *   no seal can ever be written (the seal is fenced on the parent's step), so no join can run. The
 *   header moves to `cancelled`, with why, and the children started so far are cancelled as by
 *   `cancelFanOut()`.
 */
import { readLock } from '../rules/lock-fields';
import { decodeKey, keyPath } from '../keys/key-codec';
import { StepState, type Properties } from '../types';
import type { FanParts } from './read-children';
import { headerKey, headerProperties, readHeader, UNINDEXED, type Header } from './records';

/** Why the parent no longer owns the `writing` fan-out `header`; undefined while it does (live or parked at that step). */
export function abandonedBy(parent: Properties | undefined, header: Header): string | undefined {
  if (!parent) return 'its parent entity was deleted before the fan-out was sealed';
  const lock = readLock(parent);
  if (lock.chain !== header.chain) return `another chain (${lock.chain ?? 'none'}) replaced its parent's chain before the fan-out was sealed`;
  if (lock.seq !== header.seq) return `its parent's chain moved to step ${lock.seq} without sealing it`;
  if (lock.state === StepState.scheduled || lock.state === StepState.failed) return undefined;
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
    if (!current || current.state !== 'writing') return undefined;
    const why = abandonedBy(await tx.get(header.parent), current);
    if (why === undefined) return undefined;
    const next: Header = { ...current, state: 'cancelled', cancelJoin: false, reason: why, due: now };
    tx.put(headerKey(id, header.parent.namespace), headerProperties(next, (k) => parts.dispatcher.encodeKey(k)), UNINDEXED);
    return next;
  });
  if (abandoned) parts.config.logger.warn('fan-out abandoned by its parent before its seal; its children are cancelled', { fanout: id, parent: keyPath(header.parent), why: abandoned.reason });
  return abandoned;
}

/**
 * A child settling (docs/design.md, section 18): once its chain ended (completed, failed for good,
 * cancelled) or its entity is gone, its own record moves from `pending` to its end state, in a
 * transaction that writes only that record; then it runs the completion check. A record already
 * settled is left alone, so a re-delivered child, or the sweep repairing a child that crashed
 * between its chain's end and its settle, changes nothing twice.
 */
import type { Key } from '@google-cloud/datastore';
import { decodeKey, keyPath } from '../keys/key-codec';
import { childEnd } from './child-end';
import type { Json } from '../types';
import { checkJoin } from './join-trigger';
import type { FanParts } from './read-children';
import { childKey, fanOutOfChain, readChild, resultText, type ChildState } from './records';
import { writerOf } from './record-writer';



/**
 * Settles the child whose chain is `chain` on `key` if its chain ended, then runs the completion
 * check, starting from the child's own page. Resolves to whether the record was settled by this call.
 */
export async function settleChild(parts: FanParts, key: Key, chain: string): Promise<boolean> {
  const fanout = fanOutOfChain(chain);
  if (!fanout) return false;
  const end = childEnd(await parts.reads.get(key), chain);
  if (!end) return false;
  const { settled, page } = await settle(parts, chain, key.namespace, end.state, end.error);
  await checkJoin(parts, fanout, key.namespace, page === undefined ? undefined : { page, child: chain });
  return settled;
}

/** Moves child record `id` from `pending` to `state` (nothing when it already settled). */
export async function settleRecord(parts: FanParts, id: string, namespace: string | undefined, state: ChildState, error?: string): Promise<boolean> {
  return (await settle(parts, id, namespace, state, error)).settled;
}

/** {@link settleRecord}, also saying which page listed the child (undefined when it has no record). */
async function settle(parts: FanParts, id: string, namespace: string | undefined, state: ChildState, error?: string): Promise<{ settled: boolean; page?: number }> {
  const now = new Date(parts.config.clock());
  return parts.locks.transact(async (tx) => {
    const child = readChild(id, await tx.get(childKey(id, namespace)), decodeKey);
    if (!child) return { settled: false };
    const page = child.page === undefined ? {} : { page: child.page };
    if (child.state !== 'pending') return { settled: false, ...page };
    const next = { ...child, state, settledAt: now };
    if (error !== undefined) next.error = error;
    writerOf(parts).child(tx, next);
    return { settled: true, ...page };
  });
}

/**
 * Once an attempt on a child chain came to a 200 answer, before that answer is sent: settles the
 * child if its chain ended, and runs the completion check. Before, not after: on Cloud Run a
 * container gets CPU only while it serves a request, and shutdown's drain waits only for requests,
 * so work left after the answer could stall or be cut off, leaving the join to the sweep
 * (`stallAfter` later). The answer waits for one small transaction and the check. Never throws: a
 * failure is logged and left to the sweep, and the answer is still 200 (the step itself is done).
 */
export async function settleAfterAnswer(parts: FanParts, key: Key, chain: string | undefined): Promise<void> {
  if (!fanOutOfChain(chain)) return;
  try {
    await settleChild(parts, key, chain!);
  } catch (error) {
    parts.config.logger.warn('fan-out child not settled now; the sweep settles it', { key: keyPath(key), chain, error: String(error) });
  }
}

/**
 * Stores a child's small result on its record, while it is pending (`ctx.setResult()`). A child
 * that timed out (the fan-out's deadline passed while its chain was still running) goes on as the
 * guide says, and its end changes nothing: its result is dropped with a log line, and the step
 * goes on. Throwing there failed the attempt after its effect, so the step ran again (and again,
 * until it failed for good), each time unalerted.
 */
export async function setChildResult(parts: FanParts, key: Key, chain: string | undefined, value: Json): Promise<void> {
  if (!fanOutOfChain(chain)) throw new TypeError('setResult(): this chain is not a fan-out child; only a child started by ctx.fanOut() has a result');
  const text = resultText(value);
  const timedOut = await parts.locks.transact(async (tx) => {
    const child = readChild(chain!, await tx.get(childKey(chain!, key.namespace)), decodeKey);
    if (child?.state === 'timedOut') return true;
    if (!child || child.state !== 'pending') throw new TypeError('setResult(): the child already settled; its result can no longer change');
    writerOf(parts).child(tx, { ...child, result: text });
    return false;
  });
  if (timedOut) parts.config.logger.info('setResult(): the fan-out\'s deadline passed before this child settled; its result is not kept (the join counted it timed out)', { key: keyPath(key), chain });
}

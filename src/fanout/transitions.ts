/**
 * What each event writes to a fan-out's header, in pure functions `(header, event) → header`
 * (docs/design.md, section 18, "Header transitions"; the table there is tested against them row by
 * row). The header goes `writing` -> `sealed` -> `joining`, or to `cancelled` from `writing` or
 * `sealed` (and from `cancelled` to `joining` once, when the cancel asked for the join). Nothing
 * else in the library builds a header: the parts that read and write it in a transaction (start,
 * seal, join trigger, operator, abandon, sweep) check `may()` and apply one of these. A transition
 * asked for in a state it does not leave from throws a `TransitionError`.
 */
import { TransitionError } from '../errors/errors';
import type { ChildCounts, FanOutState, Header } from './records';

/** Every state a header can be in. */
export const FAN_OUT_STATES: readonly FanOutState[] = ['writing', 'sealed', 'joining', 'cancelled'];

/** The states each transition leaves from ('any': every state). `joinCancelled` also needs the cancel to have asked for the join. */
export const HEADER_FROM = {
  seal: ['writing'],
  join: ['sealed'],
  joinCancelled: ['cancelled'],
  cancel: ['writing', 'sealed'],
  abandon: ['writing'],
  reopen: ['sealed'],
  postpone: 'any',
} as const satisfies Record<string, readonly FanOutState[] | 'any'>;

/** A header transition's name. */
export type HeaderEventName = keyof typeof HEADER_FROM;

/** Whether `event` may be applied to `header` now. */
export function may(event: HeaderEventName, header: Header): boolean {
  const from: readonly FanOutState[] | 'any' = HEADER_FROM[event];
  if (from !== 'any' && !from.includes(header.state)) return false;
  return event !== 'joinCancelled' || header.cancelJoin === true;
}

function check(event: HeaderEventName, header: Header): void {
  if (!may(event, header)) throw new TransitionError(`fan-out ${header.id}: ${event} is not possible while it is ${header.state}`);
}

/** The header without its `due` (the sweep no longer looks at it). */
function undue(header: Header): Header {
  const { due: _due, ...rest } = header;
  return rest;
}

/** What opening a fan-out knows: its identity, the parent's step, the join to run, the policy. */
export type Opening = Pick<Header, 'id' | 'parent' | 'chain' | 'seq' | 'joinTask' | 'path' | 'body' | 'policy'> & { now: Date; stallAfter: number };

/** The fanning-out step opens its fan-out: `writing`, due for the sweep `stallAfter` ahead (`abandon.ts` looks if it is never sealed). */
export function open(e: Opening): Header {
  return {
    id: e.id, state: 'writing', parent: e.parent, chain: e.chain, seq: e.seq, joinTask: e.joinTask, path: e.path, body: e.body,
    policy: e.policy, pages: 0, total: 0, createdAt: e.now, due: new Date(e.now.getTime() + e.stallAfter),
  };
}

/** Every child was added: `sealed`, with its page and child counts, its deadline (if the policy sets one), due `stallAfter` ahead or at the deadline if sooner. */
export function seal(h: Header, e: { now: Date; pages: number; total: number; stallAfter: number; deadlineMs?: number | undefined }): Header {
  check('seal', h);
  const sealed: Header = { ...h, state: 'sealed', pages: e.pages, total: e.total, sealedAt: e.now, due: new Date(e.now.getTime() + e.stallAfter) };
  if (e.deadlineMs !== undefined) {
    sealed.deadline = new Date(e.now.getTime() + e.deadlineMs);
    if (sealed.deadline.getTime() < sealed.due!.getTime()) sealed.due = sealed.deadline;
  }
  return sealed;
}

/** Every child settled (or the deadline passed): `joining`, with the outcome and counts the join is told; no longer due. */
export function join(h: Header, e: { now: Date; outcome: string; counts: ChildCounts }): Header {
  check('join', h);
  return { ...undue(h), state: 'joining', outcome: e.outcome, counts: e.counts, joinedAt: e.now };
}

/** A cancel that asked for the join commits it, once: `joining`, outcome `cancelled`; no longer due. */
export function joinCancelled(h: Header, e: { now: Date; counts: ChildCounts }): Header {
  check('joinCancelled', h);
  return { ...undue(h), state: 'joining', outcome: 'cancelled', counts: e.counts, joinedAt: e.now };
}

/**
 * An operator (or a cancel of the chain that waits on a nested fan-out) cancels it: `cancelled`,
 * with whether the join is to run, due `stallAfter` ahead so the sweep finishes the cancel if the
 * call dies first (not sooner: it would race the call).
 */
export function cancel(h: Header, e: { now: Date; join: boolean; stallAfter: number }): Header {
  check('cancel', h);
  return { ...h, state: 'cancelled', cancelJoin: e.join, due: new Date(e.now.getTime() + e.stallAfter) };
}

/** Its parent left it `writing` for good: `cancelled` without a join, with why, due now (the sweep cancels its children). */
export function abandon(h: Header, e: { now: Date; reason: string }): Header {
  check('abandon', h);
  return { ...h, state: 'cancelled', cancelJoin: false, reason: e.reason, due: e.now };
}

/** An operator retries a failed child: the `reopened` count goes up, so a join decided on children read before cannot commit. */
export function reopen(h: Header): Header {
  check('reopen', h);
  return { ...h, reopened: (h.reopened ?? 0) + 1 };
}

/**
 * The sweep looked at it: due again `stallAfter` ahead (or at the deadline, if that is sooner and
 * still to come) while it is `writing` or `sealed`, or `cancelled` with its cancel unfinished (its
 * join still to commit, or `pending` children found and cancelled by this sweep); otherwise no
 * longer due.
 */
export function postpone(h: Header, e: { now: Date; stallAfter: number; pending: number }): Header {
  const rest = undue(h);
  const looking = h.state === 'writing' || h.state === 'sealed' || (h.state === 'cancelled' && (h.cancelJoin === true || e.pending > 0));
  if (!looking) return rest;
  const now = e.now.getTime();
  const at = now + e.stallAfter;
  return { ...rest, due: new Date(h.deadline && h.deadline.getTime() > now ? Math.min(at, h.deadline.getTime()) : at) };
}

/** Every header transition but `open`, by name. */
export const headerTransitions = { seal, join, joinCancelled, cancel, abandon, reopen, postpone } as const;

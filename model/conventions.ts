/**
 * The handler conventions the model relies on, in one adapter, so the model runs on today's main
 * and on the branch that states hand-backs explicitly (issue 26, defect 5) without change:
 *
 * - a silent hand-back is stated by rejecting with `ctx.signal.reason` itself, or by calling
 *   `ctx.handBack()` where the context has it; either way no effect has happened;
 * - "stopped after the effect" is a rejection with an `AbortError` whose cause is the signal's
 *   reason, as `fetch(url, { signal })` rejects when the abort cuts the reply: the charge happened,
 *   so the next run must be alerted (on main this is wrongly taken as silent: defect 5);
 * - `ctx.idempotencyKey`, where the context has it, is stable per step per chain.
 */
import type { TaskContext } from '../src/step/handler-types';

/** What a context may offer beyond today's main: the hand-back call and the idempotency key. */
interface NewContext {
  handBack?: () => never | Promise<never> | void;
  idempotencyKey?: string;
}

/** Stops before the effect, silently: `ctx.handBack()` where it exists, else a rejection with the signal's reason itself. */
export async function handBackSilently<E>(ctx: TaskContext<E>): Promise<never> {
  const handBack = (ctx as unknown as NewContext).handBack;
  if (typeof handBack === 'function') await handBack.call(ctx);
  throw ctx.signal.reason;
}

/** The error a `fetch` given `ctx.signal` rejects with when the abort cut the reply of a request that took effect. */
export function abortedAfterEffect<E>(ctx: TaskContext<E>): Error {
  const error = new Error('This operation was aborted (the reply was cut after the server took the request)', { cause: ctx.signal.reason });
  error.name = 'AbortError';
  return error;
}

/** The step's idempotency key, where the context offers one (undefined on today's main). */
export function idempotencyKeyOf<E>(ctx: TaskContext<E>): string | undefined {
  const key = (ctx as unknown as NewContext).idempotencyKey;
  return typeof key === 'string' ? key : undefined;
}

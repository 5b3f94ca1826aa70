/**
 * What a bulk action acts on. A filter names a kind (and namespace) and, optionally, the run that
 * started the chains (a kickoff's id, from `scheduleMany()`), or names a fan-out:
 *
 * | action | filter | targets |
 * | --- | --- | --- |
 * | `retry` | `{ kind, namespace? }` | every chain of the kind whose step failed for good |
 * | `retry` | `{ kind, namespace?, kickoff }` | the same, of the chains that kickoff started |
 * | `retry` | `{ fanOut, namespace? }` | the failed children of that fan-out, by `locker.retryFanOutChildren()` on its parent |
 * | `cancel` | `{ kind, namespace?, kickoff }` | the live chains (a step scheduled or running) that kickoff started |
 * | `resend` | `{ kind, namespace? }` | the stalled steps of the kind |
 *
 * Targets are fixed when the operation is confirmed: a chain that fails or stalls after that is
 * not one (its `lock_ts` is later than the operation), so a page run again never finds a chain the
 * operation already acted on (acting moves its `lock_ts` past the operation's start).
 */
import { BadRequestError } from '../../errors/errors';
import { StepState } from '../../types';
import type { LockQuery } from '../../store/lock-query';
import { kickoffRun } from '../../rules/kickoff-plan';

/** The bulk actions. */
export const BULK_ACTIONS = ['retry', 'cancel', 'resend'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** Which chains a bulk action acts on (see the file's comment for the combinations allowed). */
export interface BulkFilter {
  /** The chains' entities' kind (not with `fanOut`). */
  kind?: string;
  /** Their namespace (also the fan-out's); the default one when left out. */
  namespace?: string;
  /** Only chains this `scheduleMany()` kickoff id started. */
  kickoff?: string;
  /** The fan-out (its 24-hex-digit id) whose failed children to retry. */
  fanOut?: string;
}

/** The query range of a filter's targets: one indexed query, paged. */
export type TargetRange = Pick<LockQuery, 'kind' | 'namespace' | 'state' | 'tsBefore'> & { run?: string };

const NAME = /^[^\r\n]{1,200}$/;
/** A kickoff id (its chains' `lock_run` is `k:<id>`, `kickoffRun()`): on one line, at most 500 characters. */
const KICKOFF = /^[^\r\n]{1,500}$/;
const FAN_OUT = /^[0-9a-f]{24}$/;

/** Checks an action and its filter; throws `BadRequestError` (400) saying what is wrong. Answers the filter with its empty fields dropped. */
export function checkBulk(action: unknown, filter: unknown, kinds?: readonly string[]): { action: BulkAction; filter: BulkFilter } {
  if (typeof action !== 'string' || !(BULK_ACTIONS as readonly string[]).includes(action)) throw new BadRequestError(`the action must be one of ${BULK_ACTIONS.join(', ')}`);
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) throw new BadRequestError('the filter must be an object { kind, namespace, kickoff, fanOut }');
  const given = filter as Record<string, unknown>;
  const unknown = Object.keys(given).filter((k) => !['kind', 'namespace', 'kickoff', 'fanOut'].includes(k) && given[k] !== undefined);
  if (unknown.length > 0) throw new BadRequestError(`the filter has no field ${unknown.join(', ')}: kind, namespace, kickoff or fanOut`);
  const out: BulkFilter = {};
  for (const name of ['kind', 'namespace', 'kickoff', 'fanOut'] as const) {
    const value = given[name];
    if (value === undefined || (value === '' && name !== 'namespace')) continue;
    if (typeof value !== 'string') throw new BadRequestError(`the filter's ${name} must be a string`);
    if (value !== '') out[name] = value;
  }
  if (out.kind !== undefined && (!NAME.test(out.kind) || out.kind.startsWith('__'))) throw new BadRequestError('the filter\'s kind is not a kind name');
  if (out.kind !== undefined && kinds && !kinds.includes(out.kind)) throw new BadRequestError(`the filter's kind must be one of ${kinds.join(', ')}`);
  if (out.namespace !== undefined && !NAME.test(out.namespace)) throw new BadRequestError('the filter\'s namespace is not a namespace');
  if (out.kickoff !== undefined && !KICKOFF.test(out.kickoff)) throw new BadRequestError('the filter\'s kickoff is not a kickoff id');
  if (out.fanOut !== undefined && !FAN_OUT.test(out.fanOut)) throw new BadRequestError('the filter\'s fanOut is not a fan-out id (24 hex digits)');
  const act = action as BulkAction;
  if (out.fanOut !== undefined) {
    if (act !== 'retry' || out.kind !== undefined || out.kickoff !== undefined) throw new BadRequestError('a fan-out filter goes with retry alone, and names no kind or kickoff');
    return { action: act, filter: out };
  }
  if (out.kind === undefined) throw new BadRequestError('the filter needs a kind (or a fanOut)');
  if (act === 'cancel' && out.kickoff === undefined) throw new BadRequestError('cancel acts on a kickoff\'s live chains: the filter needs a kickoff');
  if (act === 'resend' && out.kickoff !== undefined) throw new BadRequestError('resend acts on the stalled steps of a kind: the filter takes no kickoff');
  return { action: act, filter: out };
}

/**
 * The targets of a kind's filter as one query range, fixed at `createdAt`: failed (`retry`), or
 * scheduled and without progress for `stallAfter` before it (`resend`), whose `lock_ts` is before
 * `createdAt`; or scheduled (`cancel`), however far they moved on since (a kickoff's chains are
 * cancelled wherever they are).
 */
export function targetRange(action: BulkAction, filter: BulkFilter, createdAt: Date, stallAfter: number): TargetRange {
  const base = { kind: filter.kind!, namespace: filter.namespace ?? '', ...(filter.kickoff !== undefined ? { run: kickoffRun(filter.kickoff) } : {}) };
  switch (action) {
    case 'retry': return { ...base, state: StepState.failed, tsBefore: createdAt };
    case 'resend': return { ...base, state: StepState.scheduled, tsBefore: new Date(createdAt.getTime() - stallAfter + 1) };
    case 'cancel': return { ...base, state: StepState.scheduled };
  }
}

/** The filter in words, for the audit line and the page: `failed Order chains of kickoff k1 in namespace "n"`. */
export function describeBulk(action: BulkAction, filter: BulkFilter): string {
  const where = filter.namespace ? ` in namespace ${JSON.stringify(filter.namespace)}` : '';
  if (filter.fanOut !== undefined) return `retry the failed children of fan-out ${filter.fanOut}${where}`;
  const of = filter.kickoff !== undefined ? ` of kickoff ${filter.kickoff}` : '';
  switch (action) {
    case 'retry': return `retry every failed ${filter.kind} chain${of}${where}`;
    case 'cancel': return `cancel every live ${filter.kind} chain${of}${where}`;
    case 'resend': return `resend every stalled ${filter.kind} step${where}`;
  }
}

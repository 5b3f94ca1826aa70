/**
 * One target of a bulk operation's page: the operator's action on one chain (`locker.retry`,
 * `cancel` or `resend`, fenced by the step the page read), and what came of it. The fence makes a
 * page run again after a crash act on nothing twice: a chain the first run acted on has moved on
 * (another `lock_ts`, another state, a ledger record just sent), so the second run leaves it alone
 * and counts it skipped.
 */
import type { Key } from '@google-cloud/datastore';
import { TransitionError } from '../../errors/errors';
import { keyPath } from '../../keys/key-codec';
import type { Lock } from '../../rules/lock-fields';
import type { LedgerRecord } from '../../types';
import type { ActionOptions, ActionResult, Guard } from '../actions';
import type { BulkAction } from './filter';

/** What became of one target: acted on, left alone with why, or an error. */
export type TargetOutcome = { outcome: 'done' } | { outcome: 'skipped'; why: string } | { outcome: 'failed'; error: string };

/** A target as the page's query read it. */
export interface Target {
  key: Key;
  /** Its step, its chain and when its lock was last written, as read. */
  seq: number;
  chain: string | undefined;
  ts: Date | undefined;
}

/** The operator's actions, as the Locker's facade runs them (a function port per action). */
export type TargetActions = Record<BulkAction, (key: Key, options: ActionOptions, guard: Guard) => Promise<ActionResult>>;

/**
 * The fence of one target: the chain and the lock's time the page read (retry and resend), and,
 * for resend, a step no task was sent for within `stallAfter` (a resend sends one: a page run
 * again finds it recent). Cancel needs only the chain: cancelling ends it for good.
 */
export function guardOf(action: BulkAction, target: Target, now: number, stallAfter: number): Guard {
  return (lock: Lock, record?: LedgerRecord) => {
    if (lock.chain !== target.chain) return 'another chain runs on it since the operation read it';
    if (action !== 'cancel' && lock.ts?.getTime() !== target.ts?.getTime()) return 'it moved on since the operation read it';
    if (action === 'resend' && record && now - record.sentAt.getTime() < stallAfter) return 'a task was sent for it recently (no longer stalled)';
    return undefined;
  };
}

/** Acts on one target; a refusal (`TransitionError`) is a skip with its reason; any other error is thrown (the page counts it failed, or retries). */
export async function actOn(actions: TargetActions, action: BulkAction, target: Target, guard: Guard): Promise<TargetOutcome> {
  try {
    await actions[action](target.key, { seq: target.seq }, guard);
    return { outcome: 'done' };
  } catch (error) {
    if (error instanceof TransitionError) return { outcome: 'skipped', why: reasonOf(error.message, keyPath(target.key)) };
    throw error;
  }
}

/** A refusal's reason without the key it names (so reasons add up across targets). */
function reasonOf(message: string, path: string): string {
  const text = message.startsWith(path) ? message.slice(path.length).replace(/^:? /, '') : message;
  return text.replace(/^does not exist$/, 'its entity was deleted')
    .replace(/^is at step \d+ now, not step \d+.*$/, 'it moved to another step since the operation read it')
    .replace(/^step \d+ has no ledger record.*$/, 'its step has no ledger record (no task can be made for it)')
    .replace(/^step \d+ is a fan-out's join.*$/, 'it waits at a fan-out\'s join')
    .replace(/^step \d+ is ([a-z ]+); only .*$/, 'it is $1 now')
    .replace(/^is a fan-out child that settled (\w+).*$/, 'it is a fan-out child that settled $1 (retry it with its fan-out)');
}

/**
 * The operator's actions on a chain: retry a failed step, cancel a chain, re-send the current
 * step. Each is fenced like every other write (a transaction that re-reads the entity and applies
 * the lock transition, which refuses a step in the wrong state; with `seq`, also a step that moved
 * on since the operator looked), then logged and emitted as an event.
 */
import type { Key } from '@google-cloud/datastore';
import type { Core } from '../core';
import { TransitionError } from '../errors';
import { keyPath } from '../key-codec';
import { rejectUnknownOptions, type OptionNames } from '../option-names';
import { readLock, writeLock, type Lock } from '../lock-fields';
import { cancel } from '../transitions';

/** What an action may be told about the step the operator saw. */
export interface ActionOptions {
  /** The step the operator saw: the action is refused (`TransitionError`) when the chain is at another step now. */
  seq?: number;
}

/** Every option name of {@link ActionOptions}. */
export const ACTION_OPTION_NAMES: OptionNames<ActionOptions> = { seq: true };

/** What an action did. */
export interface ActionResult {
  /** The step acted on. */
  seq: number;
  /** The task created for it (retry, resend). */
  task?: string;
  /** Whether that task was created now (otherwise the sweep re-delivers the step). */
  sent?: boolean;
}

/** Cancels the chain on `key` at its current step: the step never runs, its tasks are dropped on arrival. */
export async function cancelChain(core: Core, key: Key, options: ActionOptions = {}): Promise<ActionResult> {
  rejectUnknownOptions('locker.cancel()', options, ACTION_OPTION_NAMES);
  const now = new Date(core.config.clock());
  const seq = await core.transact(async (tx) => {
    const props = await tx.get(key);
    const lock = current(key, props === undefined ? undefined : readLock(props), options);
    core.write(tx, key, writeLock(props!, cancel(lock, { now })));
    return lock.seq;
  });
  core.seen.forget(key);
  core.emit('cancelled', { key, seq, attempt: '' });
  core.config.logger.warn('chain cancelled by an operator', { key: keyPath(key), namespace: key.namespace, seq });
  return { seq };
}

/** The lock to act on: the entity must exist and, when `options.seq` is given, be at that step. */
export function current(key: Key, lock: Lock | undefined, options: ActionOptions): Lock {
  if (!lock) throw new TransitionError(`${keyPath(key)} does not exist`);
  if (options.seq !== undefined && lock.seq !== options.seq) {
    throw new TransitionError(`${keyPath(key)} is at step ${lock.seq} now, not step ${options.seq}: reload and look again`);
  }
  return lock;
}

/** Revives a failed step with a fresh retry budget, on a new task. */
export async function retryStep(_core: Core, key: Key, _options: ActionOptions = {}): Promise<ActionResult> {
  throw new TransitionError(`${keyPath(key)}: retry needs the ledger of live steps, which keeps the step's path and payload; it has not landed yet`);
}

/** Re-delivers the current step now, on a new task. */
export async function resendStep(_core: Core, key: Key, _options: ActionOptions = {}): Promise<ActionResult> {
  throw new TransitionError(`${keyPath(key)}: resend needs the ledger of live steps, which keeps the step's path and payload; it has not landed yet`);
}

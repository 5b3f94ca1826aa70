/**
 * Starting a bulk operation, exactly once per id: in one transaction on the operation's record,
 * a record already there is answered as it is (a confirmation posted twice, a retried POST, a
 * second `locker.bulk()` with the same id), and an absent one is written with the first step of
 * its chain (its ledger record in the same commit, like any kickoff); the task follows the commit,
 * and the sweep re-delivers it if this process dies first. Nothing of the operation's work runs in
 * the request that starts it: every page is a step of its own.
 */
import { randomBytes } from 'node:crypto';
import { rejectUnknownOptions, type OptionNames } from '../../config/option-names';
import { TransitionError } from '../../errors/errors';
import { NO_ALERTS } from '../../rules/alert-markers';
import { readLock } from '../../rules/lock-fields';
import { newChainId } from '../../rules/ledger-record';
import { checkStep, commitNextStep, sendNextStep, type ChainSettings } from '../../chain/next-step';
import type { Dispatcher } from '../../chain/dispatcher';
import type { Emit } from '../../events/emit';
import type { Locks } from '../../locks/locks';
import type { Logger } from '../../types';
import { checkBulk, type BulkAction, type BulkFilter } from './filter';
import { OPERATION_ID, operationKey, operationProperties, readOperation, type Operation } from './operation';
import { countTargets, type TargetReads } from './targets';
import { auditFields } from './step';
import { open } from './transitions';

/** Options of `locker.bulk()`. */
export interface BulkOptions {
  /**
   * Where `locker.statusRouter()` is mounted (`app.use(mount, router)`; '' at the root): the
   * operation's steps are delivered to its route `POST {mount}/operations/step`. Required.
   */
  mount: string;
  /**
   * The operation's id (8 to 64 characters of `A-Z a-z 0-9 _ -`): a second call with the same id
   * starts nothing and answers the operation the first one started. Defaults to a new random id.
   */
  id?: string;
  /** Who asks, for the audit line and the operation's row (the status router passes the authenticator's principal). Defaults to nobody named. */
  by?: string;
}

const BULK_OPTION_NAMES: OptionNames<BulkOptions> = { mount: true, id: true, by: true };

/** What `locker.bulk()` answers. */
export interface BulkStarted {
  /** The operation, as stored when the call answered. */
  operation: Operation;
  /** False when an operation with that id already existed (nothing was started). */
  created: boolean;
}

/** What starting an operation uses. */
export interface StartParts extends TargetReads {
  readonly locks: Locks;
  readonly emit: Emit;
  readonly dispatcher: Dispatcher;
  readonly config: ChainSettings & { readonly logger: Logger };
}

/** A new operation id: `op-` and 16 random url-safe characters. */
export function newOperationId(): string {
  return `op-${randomBytes(12).toString('base64url')}`;
}

/** The route an operation's steps are delivered to, for a status router mounted at `mount`. */
export function operationStepPath(mount: string): string {
  if (typeof mount !== 'string' || !/^(\/[\x21-\x7e]*)?$/.test(mount) || mount.includes('?') || mount.includes('#')) {
    throw new TypeError(`bulk(): mount must be where the status router is mounted ('' or a path starting with "/"); got ${JSON.stringify(mount)}`);
  }
  return `${mount.replace(/\/+$/, '')}/operations/step`;
}

/** Starts the operation `action` on `filter` (see the file's comment); throws `BadRequestError` for a bad filter, `TransitionError` (409) when the id names another operation. */
export async function startOperation(parts: StartParts, action: BulkAction, filter: BulkFilter, options: BulkOptions, kinds?: readonly string[]): Promise<BulkStarted> {
  if (typeof options !== 'object' || options === null) throw new TypeError('bulk(action, filter, options): options { mount } are required');
  rejectUnknownOptions('locker.bulk()', options, BULK_OPTION_NAMES);
  const checked = checkBulk(action, filter, kinds);
  const path = operationStepPath(options.mount);
  const id = options.id ?? newOperationId();
  if (typeof id !== 'string' || !OPERATION_ID.test(id)) throw new TypeError('bulk(): id must be 8 to 64 characters of A-Z a-z 0-9 _ -');
  if (options.by !== undefined && typeof options.by !== 'string') throw new TypeError('bulk(): by must be a string');
  const key = operationKey(id, checked.filter.namespace);
  const earlier = readOperation(id, await parts.reads.get(key));
  if (earlier) return { operation: same(earlier, checked), created: false };
  const now = new Date(parts.config.clock());
  const matched = await countTargets(parts, checked.action, checked.filter, now, parts.config.stallAfter);
  const op = open({ id, ...checked, by: options.by?.slice(0, 200), now, path, matched: matched.count, matchedExact: matched.exact });
  const step = checkStep(parts, path, undefined);
  const written = await parts.locks.update(key, (tx, found) => {
    if (found) return { earlier: readOperation(id, found.props) };
    const planned = commitNextStep(parts, tx, key, {}, readLock({}), { chain: newChainId(), step, how: 'kickoff', own: operationProperties(op), sent: NO_ALERTS }, now);
    return { record: planned.record };
  });
  if (!written.record) {
    if (!written.earlier) throw new TransitionError(`operation id ${id} names a record that is not a bulk operation's`);
    return { operation: same(written.earlier, checked), created: false };
  }
  await sendNextStep(parts, written.record, '');
  parts.config.logger.info('bulk operation started', auditFields(op));
  return { operation: op, created: true };
}

/** The operation already stored under the id, when it is the one asked for again; a `TransitionError` when the id names another. */
function same(op: Operation, asked: { action: BulkAction; filter: BulkFilter }): Operation {
  if (op.action === asked.action && JSON.stringify(op.filter) === JSON.stringify(asked.filter)) return op;
  throw new TransitionError(`operation id ${op.id} already names another operation (${op.action}); it was not started again`);
}

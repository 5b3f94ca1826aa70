/**
 * Bulk operations as the operator sees them (`locker.inspect().operations()` and `.operation(id)`,
 * the status router's `/operations.json` and `/operation?id=`): each with its progress and the
 * state of its own chain of steps. Read by key, or listed by the operations' own lock fields
 * (one indexed query per step state, newest first): never a scan.
 */
import type { StoreReads } from '../../store/reads';
import { readLock } from '../../rules/lock-fields';
import { StepState } from '../../types';
import { describeBulk } from './filter';
import { OPERATION_KIND, operationKey, readOperation, type Operation } from './operation';
import type { Properties } from '../../types';

/** An operation with its progress. */
export interface OperationView extends Operation {
  /** The action and filter in words. */
  description: string;
  /** How long ago it was confirmed, ms. */
  ageMs: number;
  /** Targets dealt with so far (done, skipped or failed). */
  processed: number;
  /**
   * Its own chain: `running` while its pages go on, `done` after the last, `failed` when a page's
   * step failed for good (its error in `stepError`; retry it with `locker.retry()` on the record's
   * key, from the status page), `cancelled` when an operator cancelled it.
   */
  chain: 'running' | 'done' | 'failed' | 'cancelled';
  /** The page step's last error, when it failed. */
  stepError?: string;
}

/** Operations listed at most. */
export const MAX_OPERATIONS = 100;

/** The view of a record read at `now`; undefined when it is not an operation's. */
export function viewOperation(id: string, props: Properties | undefined, now: number): OperationView | undefined {
  const op = readOperation(id, props);
  if (!op || !props) return undefined;
  const lock = readLock(props);
  const chain = lock.state === StepState.failed ? 'failed' : lock.state === StepState.cancelled ? 'cancelled' : op.state;
  const view: OperationView = {
    ...op, description: describeBulk(op.action, op.filter), ageMs: Math.max(0, now - op.createdAt.getTime()),
    processed: op.done + op.skipped + op.failed, chain,
  };
  if (chain === 'failed' && lock.err) view.stepError = lock.err.split('\n', 1)[0]!.slice(0, 300);
  return view;
}

/** One operation by id, in `namespace` (its targets'); undefined when there is none. */
export async function getOperation(reads: StoreReads, id: string, namespace: string | undefined, now: number): Promise<OperationView | undefined> {
  return viewOperation(id, await reads.get(operationKey(id, namespace)), now);
}

/**
 * The newest operations of `namespaces` (by their last progress), at most `limit` (1 to
 * {@link MAX_OPERATIONS}): a query per namespace and step state of their chain, run concurrently.
 */
export async function listOperations(reads: StoreReads, namespaces: readonly string[], limit: number, now: number): Promise<OperationView[]> {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_OPERATIONS) throw new RangeError(`limit must be 1 to ${MAX_OPERATIONS}`);
  const states = [StepState.scheduled, StepState.complete, StepState.failed, StepState.cancelled];
  const queries = namespaces.flatMap((namespace) => states.map((state) => ({ kind: OPERATION_KIND, namespace, state, order: 'desc' as const, limit })));
  const pages = await Promise.all(queries.map((q) => reads.queryLocks(q)));
  const views = pages.flatMap((p) => p.entities.map((e) => viewOperation(e.key.name ?? '', e.properties, now)).filter((v): v is OperationView => v !== undefined));
  return views.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1)).slice(0, limit);
}

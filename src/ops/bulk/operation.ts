/**
 * A bulk operation's record (kind `LockerOperation`, named by the operation's id, in the namespace
 * of its targets, which the sweep already covers): what an operator asked (the action and its filter), who asked and when, where its
 * pages got to (the cursor) and what they did (counts). It is a lockable entity like any other: its
 * lock fields carry the operation's own chain of steps, one page per step (`step.ts`), so a page is
 * run exactly once by the same rules as any step, and resumed after a crash from the cursor its
 * last finished step stored.
 */
import { Key } from '@google-cloud/datastore';
import type { Properties } from '../../types';
import type { BulkAction, BulkFilter } from './filter';

/** The kind of the operations' records. */
export const OPERATION_KIND = 'LockerOperation';

/** An operation's state: its pages are still to run, or it went through every page. */
export type OperationState = 'running' | 'done';

/** Skip reasons kept per operation (the most frequent ones; the rest are summed under "other"). */
export const MAX_SKIP_REASONS = 5;
/** Errors kept per operation (the latest ones), each cut to {@link MAX_TEXT} characters. */
export const MAX_ERRORS = 3;
/** The longest text kept in a record field: every field stays well under Datastore's 1,500 bytes for an indexed string. */
export const MAX_TEXT = 160;

/** An operation, as its record holds it. */
export interface Operation {
  /** Its id (the record's key name): minted when the confirm page was drawn, or given to `locker.bulk()`. */
  id: string;
  action: BulkAction;
  filter: BulkFilter;
  /** Who asked: the authenticator's principal, or what `locker.bulk()` was told; undefined when nobody was named. */
  by?: string;
  /** When it was confirmed. Targets are those matching the filter at this instant (see `filter.ts`). */
  createdAt: Date;
  /** The route its steps are delivered to (where the status router serves `POST /operations/step`). */
  path: string;
  state: OperationState;
  /** Targets the filter matched when it was confirmed (a count from the store, capped). */
  matched: number;
  /** False when `matched` is a lower bound ("10,000+"). */
  matchedExact: boolean;
  /** Targets acted on. */
  done: number;
  /** Targets left alone, with why (already done by a page run again, moved on since, no longer stalled, ...). */
  skipped: number;
  /** Why targets were skipped: reason → how many (at most {@link MAX_SKIP_REASONS}, the rest under "other"). */
  skips: Record<string, number>;
  /** Targets whose action failed with an error other than a refusal. */
  failed: number;
  /** The latest of those errors (at most {@link MAX_ERRORS}). */
  errors: string[];
  /** Pages finished. */
  pages: number;
  /** Where the next page starts (the store's cursor); undefined before the first page and after the last. */
  cursor?: string;
  /** When the last page finished (state `done`). */
  finishedAt?: Date;
}

/** The record's key: in the namespace of the operation's targets (`''` or undefined: the default one). */
export function operationKey(id: string, namespace: string | undefined): Key {
  return new Key(namespace ? { namespace, path: [OPERATION_KIND, id] } : { path: [OPERATION_KIND, id] });
}

/** An operation id as minted or accepted: 8 to 64 characters of `[A-Za-z0-9_-]`. */
export const OPERATION_ID = /^[A-Za-z0-9_-]{8,64}$/;

/** The record's own properties (its lock fields are written by the lock part). */
export function operationProperties(op: Operation): Properties {
  const out: Properties = {
    op_action: op.action, op_filter: JSON.stringify(op.filter), op_created: op.createdAt, op_path: op.path, op_state: op.state,
    op_matched: op.matched, op_exact: op.matchedExact, op_done: op.done, op_skipped: op.skipped, op_skips: JSON.stringify(op.skips),
    op_failed: op.failed, op_errors: JSON.stringify(op.errors), op_pages: op.pages,
    // Always written ('' and null for none): a step's finishing write lays these over the stored properties.
    op_cursor: op.cursor ?? '', op_finished: op.finishedAt ?? null,
  };
  if (op.by !== undefined) out.op_by = op.by;
  return out;
}

/** The operation stored as `props`, or undefined when they are not an operation's (a record written by something else). */
export function readOperation(id: string, props: Properties | undefined): Operation | undefined {
  if (!props) return undefined;
  const action = props.op_action;
  const filter = parseJson(props.op_filter);
  if ((action !== 'retry' && action !== 'cancel' && action !== 'resend') || !isFilter(filter)) return undefined;
  if (!(props.op_created instanceof Date) || typeof props.op_path !== 'string') return undefined;
  const skips = parseJson(props.op_skips);
  const errors = parseJson(props.op_errors);
  const op: Operation = {
    id, action, filter, createdAt: props.op_created, path: props.op_path,
    state: props.op_state === 'done' ? 'done' : 'running',
    matched: count(props.op_matched), matchedExact: props.op_exact !== false,
    done: count(props.op_done), skipped: count(props.op_skipped), failed: count(props.op_failed), pages: count(props.op_pages),
    skips: isCounts(skips) ? skips : {},
    errors: Array.isArray(errors) ? errors.filter((e): e is string => typeof e === 'string') : [],
  };
  if (typeof props.op_by === 'string') op.by = props.op_by;
  if (typeof props.op_cursor === 'string' && props.op_cursor !== '') op.cursor = props.op_cursor;
  if (props.op_finished instanceof Date) op.finishedAt = props.op_finished;
  return op;
}

/** The entity a step of an operation is handed (`ctx.entity`): the operation, which the step replaces with its next state. */
export class OperationEntity {
  /** `op` is undefined when the record is not an operation's (its step then fails, and `raw` is kept as it was). */
  constructor(public op: Operation | undefined, private readonly raw: Properties) {}
  /** The properties the step's finishing write stores. */
  toProperties(): Properties {
    return this.op ? operationProperties(this.op) : this.raw;
  }
}

/** Text cut to {@link MAX_TEXT} characters. */
export function cut(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}

function parseJson(value: unknown): unknown {
  if (typeof value !== 'string') return undefined;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function isFilter(value: unknown): value is BulkFilter {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const f = value as Record<string, unknown>;
  return ['kind', 'namespace', 'kickoff', 'fanOut'].every((name) => f[name] === undefined || typeof f[name] === 'string');
}

function isCounts(value: unknown): value is Record<string, number> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((n) => Number.isSafeInteger(n));
}

function count(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'bigint' && value >= 0n) return Number(value);
  return 0;
}

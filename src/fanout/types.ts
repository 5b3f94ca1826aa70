/**
 * What a handler hands `ctx.fanOut()` and what a join reads with `ctx.fanIn()`.
 */
import type { Key } from '@google-cloud/datastore';
import type { OptionNames } from '../config/option-names';
import type { Json } from '../types';
import type { FanOutOutcome, FanOutPolicy } from './policy';
import type { ChildCounts, ChildState } from './records';

export type { FanOutOutcome, FanOutPolicy } from './policy';
export type { ChildCounts, ChildState } from './records';

/** One child of a fan-out: a chain started on its own entity; `K` is the store's key type. */
export interface FanOutChild<K = Key> {
  /** The child's entity (any namespace); each entity at most once per fan-out. */
  key: K;
  /** The handler path of the child chain's first step. */
  path: string;
  /** Its JSON payload. */
  payload?: Json;
  /** The entity's properties, written with the kickoff (as `locker.schedule()` writes them); an existing entity keeps the rest. */
  entity?: object;
}

/** Options of `ctx.fanOut()`. */
export interface FanOutOptions {
  /** The handler path of the join: the parent's next step, run once every child settled. */
  join: string;
  /** The join's JSON payload. */
  payload?: Json;
  /** What the join is told and when pending children time out; default: all settled, no deadline. */
  policy?: FanOutPolicy;
}

/** Every option name of {@link FanOutOptions}. */
export const FAN_OUT_OPTION_NAMES: OptionNames<FanOutOptions> = { join: true, payload: true, policy: true };

/** What `ctx.fanOut()` did. */
export interface FanOutStarted {
  /** The fan-out's id (the same on every attempt of the step). */
  id: string;
  /** Children added. */
  total: number;
  /** Children whose chain this call started (the rest were started by an earlier attempt, or settled at once). */
  started: number;
  /** Children settled at once as failed: their entity was busy with another chain, or the store refused the write for good (a store fault that may pass is retried, never counted here). */
  refused: number;
  /** The join's step: the parent's next sequence number. */
  joinSeq: number;
}

/** One settled child, as the join reads it; `K` is the store's key type. */
export interface FanInChild<K = Key> {
  /** The child's entity. */
  key: K;
  /** How it ended. */
  state: ChildState;
  /** Why it failed, was cancelled or timed out. */
  error?: string;
  /** The small result it set with `ctx.setResult()`. */
  result?: Json;
}

/** One page of children; `K` is the store's key type. */
export interface FanInPage<K = Key> {
  /** The children of this page (at most 100), filtered by state when asked. */
  children: FanInChild<K>[];
  /** Pass it to `children()` for the next page; undefined after the last. */
  cursor?: string;
}

/** What the join step of a fan-out reads (`ctx.fanIn()`); `K` is the store's key type. */
export interface FanIn<K = Key> {
  /** The fan-out's id. */
  id: string;
  /** What the policy made of the children's ends. */
  outcome: FanOutOutcome;
  /** Children per state, as the join was decided. */
  counts: ChildCounts;
  /** The children, a page at a time, read from storage (strongly consistent); optionally only those in `state`. */
  children(options?: { cursor?: string; state?: ChildState }): Promise<FanInPage<K>>;
}

/**
 * A task that arrived for a step, as the attempt sees it. The middleware makes it from the request
 * (`http/arrival.ts`, which works out the attempt's id and the task's headers on first use).
 */
import type { Key } from '@google-cloud/datastore';
import type { Request } from 'express';
import type { Json, TaskInfo } from '../types';

/** A task that arrived for a step. */
export interface Arrival {
  key: Key;
  seq: number;
  chain: string | undefined;
  attempt: string;
  payload: Json | undefined;
  task: TaskInfo;
  request: Request;
  /** A re-delivery by the sweep (`X-Lock-Send`): decided on a fresh read, never from the duplicate cache. */
  resent?: boolean;
  /**
   * When the request arrived (`performance.now()` ms): the step's time limit counts from here, as
   * the platform's request timeout does. Undefined: from when the lease was taken.
   */
  arrivedAt?: number;
}

/**
 * A task request as the attempt sees it (`Arrival`), with the two parts nothing before the store's
 * read needs worked out when first asked for: the attempt's id and the Cloud Tasks headers. The
 * read goes out first, and a duplicate answered from it never parses the task's headers at all.
 */
import { randomUUID } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import type { Request } from 'express';
import { parseTaskInfo } from './task-info';
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

/** An `Arrival` made from a task request, its attempt id and task headers worked out on first use. */
export class TaskArrival implements Arrival {
  private id: string | undefined;
  private info: TaskInfo | undefined;

  constructor(
    readonly key: Key,
    readonly seq: number,
    readonly chain: string | undefined,
    readonly resent: boolean,
    readonly payload: Json | undefined,
    readonly request: Request,
    readonly arrivedAt?: number,
  ) {}

  /** This attempt's id, made once. */
  get attempt(): string {
    return (this.id ??= randomUUID());
  }

  /** The Cloud Tasks (or App Engine) headers of the request, parsed once. */
  get task(): TaskInfo {
    return (this.info ??= parseTaskInfo(this.request.headers));
  }
}

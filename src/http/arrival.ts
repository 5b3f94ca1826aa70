/**
 * A task request as the attempt sees it (`Arrival`, `step/arrival.ts`), made with the two parts nothing before the store's
 * read needs worked out when first asked for: the attempt's id and the Cloud Tasks headers. The
 * read goes out first, and a duplicate answered from it never parses the task's headers at all.
 */
import { randomUUID } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import type { Request } from 'express';
import { parseTaskInfo } from './task-info';
import type { Arrival } from '../step/arrival';
import type { Json, TaskInfo } from '../types';

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

/**
 * A Queue that records the tasks it is given and can be told to fail, for tests of the outbox
 * that need to see exactly what was enqueued or to simulate a crash between commit and create.
 * End-to-end tests use the real LocalQueue and CloudTasksQueue instead.
 */
import { QueueError } from '../../src/errors/errors';
import type { Queue, TaskRequest } from '../../src/types';

export class RecordingQueue implements Queue {
  readonly tasks: TaskRequest[] = [];

  /** `basePath`: the path of the target URL a real queue would send these tasks under ('' by default). */
  constructor(readonly basePath?: string) {}

  /** How many of the next enqueues fail. */
  failNext = 0;

  async enqueue(task: TaskRequest): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new QueueError(`simulated failure creating ${task.name}`);
    }
    if (!this.tasks.some((t) => t.name === task.name)) this.tasks.push(task);
  }
}

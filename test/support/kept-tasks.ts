/**
 * A queue that keeps the tasks it is asked to create, and a delivery of one of them to a test app
 * as Cloud Tasks would make it (its path, headers and body): tests choose where and when each task
 * arrives, or that it never does.
 */
import assert from 'node:assert/strict';
import request from 'supertest';
import type { Queue, TaskRequest } from '../../src/types';
import { TEST_TOKEN, type TaskApp } from './task-app';

/** Keeps every task it is asked to create. */
export class KeptTasks implements Queue {
  readonly tasks: TaskRequest[] = [];
  async enqueue(task: TaskRequest): Promise<void> {
    this.tasks.push(task);
  }
  /** The last task created. */
  last(): TaskRequest {
    const task = this.tasks.at(-1);
    assert.ok(task, 'a task was created');
    return task;
  }
}

/** Delivers `task` to `to` as Cloud Tasks would. */
export function deliver(to: TaskApp, task: TaskRequest): request.Test {
  return request(to.app).post(task.path).set('x-test-auth', TEST_TOKEN).set(task.headers).set('content-type', 'application/json').send(task.body);
}

/**
 * Queues that lose tasks, wrapped around a real queue (faults injected at the seam, never in the
 * code under test):
 *
 * - `drop`: accepts every Nth task and silently never delivers it (a task that ran out of
 *   attempts, was deleted by hand, or vanished with a crashed local dispatcher);
 * - `forget`: the same, and it also remembers the name of every task it lost and answers any
 *   later create under that name as Cloud Tasks answers a used name: ALREADY_EXISTS, which the
 *   Queue contract counts as success, so nothing is delivered;
 * - `double`: delivers every task twice, the copy under another name a little later (duplicate
 *   deliveries, which must be harmless).
 */
import type { Queue, TaskRequest } from '../../src/types';

export type Loss = 'drop' | 'forget' | 'double';

/** A queue wrapper and what it did. */
export interface LossyQueue extends Queue {
  /** Names of the tasks it accepted and never delivered. */
  readonly lost: string[];
  /** Creates answered "already exists" without delivering. */
  readonly hidden: string[];
  /** Every name it was asked to create, in order. */
  readonly names: string[];
}

/** Wraps `inner`, losing every `every`-th task (counting from the first) as `loss` says. */
export function lossyQueue(inner: Queue, loss: Loss, every: number): LossyQueue {
  const lost: string[] = [];
  const hidden: string[] = [];
  const names: string[] = [];
  let count = 0;
  const queue: LossyQueue = {
    lost, hidden, names,
    async enqueue(task: TaskRequest): Promise<void> {
      names.push(task.name);
      if (loss === 'forget' && lost.includes(task.name)) {
        hidden.push(task.name);
        return; // ALREADY_EXISTS: the name was used by a task that is gone
      }
      count += 1;
      if (loss !== 'double' && count % every === 0) {
        lost.push(task.name);
        return;
      }
      await inner.enqueue(task);
      if (loss === 'double') {
        const later = new Date(Math.max(Date.now(), task.scheduleTime?.getTime() ?? 0) + 50);
        await inner.enqueue({ ...task, name: `${task.name}-copy`, scheduleTime: later });
      }
    },
  };
  if (inner.authenticator) queue.authenticator = () => inner.authenticator!();
  return queue;
}

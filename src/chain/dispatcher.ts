/**
 * The dispatcher (docs/design.md, sections 5 and 15): turns a ledger record into its task. A step's
 * record is committed with the step; its task is created after the commit, here. A task that
 * could not be created is logged and left to the sweep, which re-delivers the step once it stalled:
 * that rule lives here once, for the kickoff, `ctx.schedule()`, the operator's actions and the sweep.
 */
import type { SettingName, Settings } from '../config/settings';
import type { Key } from '@google-cloud/datastore';
import { encodeKey, keyPath } from '../keys/key-codec';
import { Headers, type LedgerRecord, type QueueDepth, type TaskRequest } from '../types';

/** What the dispatcher reads of the configuration (`keyAppId` is read at each use: it is set once the project id is known). */
export const DISPATCHER_SETTINGS = ['queue', 'logger', 'keyAppId'] as const satisfies readonly SettingName[];
export type DispatcherSettings = Settings<typeof DISPATCHER_SETTINGS>;

/** The dispatcher (see the file's comment); built once per Locker. */
export class Dispatcher {
  constructor(
    private readonly settings: DispatcherSettings,
    /** Resolves once the store's project id is known, or could not be (keys are encoded with it). */
    private readonly ready: Promise<void>,
  ) {}

  /** `X-Lock-Key` for a key (with the project id once it is known). */
  encodeKey(key: Key): string {
    return encodeKey(key, this.settings.keyAppId);
  }

  /** The task request for the record's current task (`record.task`). */
  taskRequest(record: LedgerRecord): TaskRequest {
    const headers: Record<string, string> = {
      [Headers.key]: this.encodeKey(record.key),
      [Headers.seq]: String(record.seq),
      [Headers.chain]: record.chain,
    };
    if (record.sends > 1) headers[Headers.send] = String(record.sends);
    const task: TaskRequest = { name: record.task, path: record.path, headers, body: record.body };
    if (record.scheduleTime && record.sends === 1) task.scheduleTime = record.scheduleTime;
    return task;
  }

  /** The path of the queue's target URL, which task paths are appended to: the queue's `basePath`, '' when it has none or does not say. */
  get basePath(): string {
    return this.settings.queue?.basePath ?? '';
  }

  /** What the queue holds now, when it can tell (`Queue.depth`); undefined otherwise, or when asking failed. */
  async depth(): Promise<QueueDepth | undefined> {
    const queue = this.settings.queue;
    if (!queue?.depth) return undefined;
    try {
      return await queue.depth();
    } catch (error) {
      this.settings.logger.warn('the queue could not tell its depth', { error: error instanceof Error ? error.message : String(error) });
      return undefined;
    }
  }

  /** Whether there is a queue to send tasks to (`schedule()`, `scheduleMany()`, `fanOut()` and `sweep()` need one). */
  get hasQueue(): boolean {
    return this.settings.queue !== undefined;
  }

  /** Creates the record's current task; resolves to the error when it could not be (nothing is logged), undefined when it was created. */
  async enqueue(record: LedgerRecord): Promise<{ error: unknown } | undefined> {
    const queue = this.settings.queue;
    if (!queue) return { error: new Error('no queue') };
    try {
      await this.ready; // the key's encoding may wait for the store's project id
      await queue.enqueue(this.taskRequest(record));
      return undefined;
    } catch (error) {
      return { error };
    }
  }

  /**
   * Creates the record's current task, after the commit. A failure is logged and leaves the step to
   * the sweep; resolves to whether the task was created.
   */
  async send(record: LedgerRecord): Promise<boolean> {
    if (!this.settings.queue) return false;
    const failed = await this.enqueue(record);
    if (!failed) return true;
    this.settings.logger.warn('task not created; the sweep re-delivers the step once it is stalled', {
      task: record.task, key: keyPath(record.key), seq: record.seq, error: failed.error instanceof Error ? failed.error.message : String(failed.error),
    });
    return false;
  }
}

/**
 * The seams a crash-test app dies at (`bulk-crash-app.ts`, `tick-crash-app.ts`): the store's
 * generated client (a recorded client, `datastore-spy.ts`) and the queue. While armed, the app
 * SIGKILLs itself just before the `KILL_AFTER`-th RPC or task of kind `KILL_AT` (`lookup`,
 * `commit` or `enqueue`), printing `<app> killed at <kind> #<n>` first.
 */
import type { Datastore } from '@google-cloud/datastore';
import type { LocalQueue, Queue, TaskRequest } from '../../src/index';
import { spyClient, type SpiedClient } from './datastore-spy';

/** The kinds of call an app can die before. */
export type KillKind = 'lookup' | 'commit' | 'enqueue';

export interface KillSwitch {
  /** Whether calls are counted and the app dies at its point. */
  armed: boolean;
  /** The store's client, counting `lookup` and `commit` (no other RPC is recorded). */
  readonly client: SpiedClient['client'];
  /** `local`, counting `enqueue`. */
  queue(local: LocalQueue): Queue;
}

/** A switch for app `app`, read from `KILL_AT` and `KILL_AFTER` in `env`. */
export function killSwitch(app: string, datastore: Datastore, env: NodeJS.ProcessEnv, armed: boolean): KillSwitch {
  const killAt = env.KILL_AT ?? '';
  const killAfter = Number(env.KILL_AFTER ?? '0');
  const seen: Record<KillKind, number> = { lookup: 0, commit: 0, enqueue: 0 };
  const maybeDie = (kind: KillKind): void => {
    if (!sw.armed || kind !== killAt) return;
    seen[kind] += 1;
    if (seen[kind] !== killAfter) return;
    // At once, as a power cut would: no `finally`, no shutdown.
    console.log(`${app} killed at ${kind} #${killAfter}`);
    process.kill(process.pid, 'SIGKILL');
    throw new Error('unreachable');
  };
  const spy = spyClient(datastore, {
    keepRequests: false,
    rewrite: (method, request) => {
      if (method === 'lookup' || method === 'commit') maybeDie(method);
      return request;
    },
  });
  const sw: KillSwitch = {
    armed,
    client: spy.client,
    queue: (local) => ({
      authenticator: () => local.authenticator(),
      async enqueue(task: TaskRequest) {
        maybeDie('enqueue');
        return local.enqueue(task);
      },
    }),
  };
  return sw;
}

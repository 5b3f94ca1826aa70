/**
 * A real app for bulk operations: Express on loopback, a Locker on the given store with the local
 * dispatcher (real HTTP, real signatures), a one-step `/work` route that fails for good while its
 * key is in `failing`, the status router at `/ops` (an operator token, a principal), and the sweep
 * on a timer. Every handler run is recorded by key.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Express } from 'express';
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../../src/keys/key-codec';
import { Locker } from '../../src/locker';
import { LocalQueue } from '../../src/queue/local';
import { PermanentError, StoreUnavailableError } from '../../src/errors/errors';
import type { AlertEvent, Authenticator, Store } from '../../src/types';
import type { OperationView } from '../../src/ops/bulk/view';
import { MemoryLogger } from './task-app';

/** The operator's token the rig's status router takes, and who it says the operator is. */
export const OPERATOR = { token: 'Bearer operator-secret', principal: 'ops@example.com' };

export const operatorAuth: Authenticator = (req) => (req.headers.authorization === OPERATOR.token
  ? { ok: true, principal: OPERATOR.principal }
  : { ok: false, status: 401, reason: 'no operator token' });

export interface BulkRig {
  app: Express;
  locker: Locker;
  logger: MemoryLogger;
  alerts: AlertEvent[];
  /** Handler runs by key path. */
  runs: Map<string, number>;
  /** Key paths whose step fails for good while listed. */
  failing: Set<string>;
  /** Waits until `check` answers true; fails after `limitMs` with `what`. */
  until(what: string, check: () => Promise<boolean>, limitMs?: number): Promise<void>;
  /** Waits until operation `id` is done, and answers it. */
  operationDone(id: string, namespace: string | undefined, limitMs?: number): Promise<OperationView>;
  close(): Promise<void>;
}

export async function bulkRig(store: Store, options: { kind: string; namespace: string | undefined }): Promise<BulkRig> {
  const app = express();
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const logger = new MemoryLogger();
  const local = new LocalQueue({ baseUrl: `http://127.0.0.1:${port}`, logger, minBackoffMs: 20, maxBackoffMs: 200 });
  const alerts: AlertEvent[] = [];
  const locker = new Locker({ store, queue: local, logger, alerter: (e) => { alerts.push(e); }, leaseDuration: 3_000, stallAfter: 3_000, maxRetries: 3 });
  const runs = new Map<string, number>();
  const failing = new Set<string>();
  app.post('/work', locker.handle(async (ctx) => {
    const path = keyPath(ctx.key);
    runs.set(path, (runs.get(path) ?? 0) + 1);
    if (failing.has(path)) throw new PermanentError('card declined');
  }, (props) => props));
  app.use('/ops', locker.statusRouter({ authenticate: operatorAuth, kinds: [options.kind], namespaces: [options.namespace ?? ''], refreshSeconds: 0 }));
  locker.startSweeping(150);
  const until = async (what: string, check: () => Promise<boolean>, limitMs = 60_000): Promise<void> => {
    const deadline = Date.now() + limitMs;
    // A read the emulator answers late on a loaded machine (StoreUnavailableError) is asked again.
    const ask = (): Promise<boolean> => check().catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) return false;
      throw error;
    });
    while (!(await ask())) {
      if (Date.now() > deadline) throw new Error(`not within ${limitMs} ms: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  return {
    app, locker, logger, alerts, runs, failing, until,
    async operationDone(id, namespace, limitMs = 90_000) {
      let op: OperationView | undefined;
      await until(`operation ${id} done`, async () => {
        op = await locker.inspect().operation(id, namespace);
        return op?.chain === 'done';
      }, limitMs);
      return op!;
    },
    async close() {
      await locker.shutdown();
      await local.shutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** How many of `keys` are in lock state `state` now (read by key: strongly consistent, a lookup per 1,000). */
export async function countKeysIn(store: Store, keys: readonly Key[], state: string): Promise<number> {
  let n = 0;
  for (let i = 0; i < keys.length; i += 1_000) {
    const part = keys.slice(i, i + 1_000);
    const props = store.readMany ? (await store.readMany(part)).map((r) => r.properties) : await Promise.all(part.map((k) => store.get(k)));
    n += props.filter((p) => p?.lock_state === state).length;
  }
  return n;
}

/** The key paths of `keys`. */
export function pathsOf(keys: readonly Key[]): string[] {
  return keys.map((k) => keyPath(k));
}

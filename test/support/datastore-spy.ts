/**
 * A seam in front of Datastore for the tests: a real generated `v1.DatastoreClient` (the store's
 * `client` option) whose five RPCs are recorded, and whose requests a test may rewrite before they
 * are sent (e.g. drop `baseVersion`, to play a backend that ignores it), or hold a request back
 * until the test lets it go (a slow call, at a chosen point).
 */
import { DatastoreClient, type Datastore } from '@google-cloud/datastore';

/** gRPC's ABORTED: the backend's answer to contention. */
const ABORTED = 10;

/** The RPCs a `DatastoreStore` sends. */
export const RPC_METHODS = ['lookup', 'beginTransaction', 'commit', 'rollback', 'runQuery', 'runAggregationQuery'] as const;
export type RpcMethod = (typeof RPC_METHODS)[number];

/** One RPC as it was sent (after any rewrite). */
export interface SentRpc {
  method: RpcMethod;
  request: {
    mode?: string;
    transaction?: unknown;
    readOptions?: Record<string, unknown>;
    mutations?: Record<string, unknown>[];
  };
}

/** A recorded client. */
export interface SpiedClient {
  client: DatastoreClient;
  /** The method names, in order. */
  readonly calls: RpcMethod[];
  /** The requests, in order. */
  readonly sent: SentRpc[];
  /** The indexes in `calls` of the RPCs the backend answered ABORTED (contention), which the store sends again. */
  readonly aborted: Set<number>;
  /** The indexes in `calls` of the lookups answered with deferred keys (a loaded backend's), which the store asks for again in one more lookup. */
  readonly deferred: Set<number>;
  /** Forgets what was recorded. */
  clear(): void;
  /** Closes the underlying client. */
  close(): Promise<void>;
}

/** Rewrites a request before it is sent; returns the request to send. */
export type Rewrite = (method: RpcMethod, request: SentRpc['request']) => SentRpc['request'];

/** How a spy records. */
export interface SpyOptions {
  /** Rewrites each request before it is sent. Defaults to none. */
  rewrite?: Rewrite;
  /** Keep every request in `sent`. Defaults to true; false keeps only the method names. */
  keepRequests?: boolean;
  /** Called before each request is sent; the request waits until what it returns resolves. */
  hold?: (method: RpcMethod, request: SentRpc['request']) => Promise<void> | undefined;
}

/** A generated client on `datastore`'s options whose RPCs are recorded (and rewritten). */
export function spyClient(datastore: Datastore, options: SpyOptions = {}): SpiedClient {
  const { rewrite, keepRequests = true, hold } = options;
  const real = new DatastoreClient({ ...datastore.options });
  const calls: RpcMethod[] = [];
  const sent: SentRpc[] = [];
  const aborted = new Set<number>();
  const deferred = new Set<number>();
  const methods = new Set<string | symbol>(RPC_METHODS);
  const client = new Proxy(real, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (!methods.has(property)) return value.bind(target);
      return (request: SentRpc['request'], ...rest: unknown[]) => {
        const method = property as RpcMethod;
        const actual = rewrite ? rewrite(method, request) : request;
        const send = (): unknown => {
          const index = calls.push(method) - 1;
          if (keepRequests) sent.push({ method, request: actual });
          const answer = (value as (...args: unknown[]) => unknown).call(target, actual, ...rest);
          if (answer instanceof Promise) {
            answer.then((answered: unknown) => {
              const response = Array.isArray(answered) ? (answered[0] as { deferred?: unknown[] } | undefined) : undefined;
              if (method === 'lookup' && (response?.deferred?.length ?? 0) > 0) deferred.add(index);
            }, (error: unknown) => {
              if ((error as { code?: unknown } | null)?.code === ABORTED) aborted.add(index);
            });
          }
          return answer;
        };
        const held = hold?.(method, actual);
        return held ? held.then(send) : send();
      };
    },
  });
  return {
    client,
    calls,
    sent,
    aborted,
    deferred,
    clear() {
      calls.length = 0;
      sent.length = 0;
      aborted.clear();
      deferred.clear();
    },
    close: () => real.close(),
  };
}

/**
 * Counts the Datastore RPCs an operation sends, by method, by wrapping the methods of the client's
 * generated `DatastoreClient` for the duration of a measurement. Used in an untimed pass only.
 */
import type { Datastore } from '@google-cloud/datastore';

const METHODS = ['lookup', 'beginTransaction', 'commit', 'rollback', 'runQuery'] as const;
type Method = (typeof METHODS)[number];

/** RPCs per method. */
export type RpcCounts = Record<Method, number>;

type GapicClient = Record<string, unknown>;

/**
 * Runs `ops` operations made by `op` (one after another) and returns the RPCs per operation.
 * Returns undefined when the client's internals are not where this version keeps them.
 */
export async function rpcsPerOp(datastore: Datastore, ops: number, op: (i: number) => Promise<void>): Promise<RpcCounts | undefined> {
  const client = gapicClient(datastore);
  if (!client) return undefined;
  const counts = Object.fromEntries(METHODS.map((m) => [m, 0])) as RpcCounts;
  const originals = new Map<Method, unknown>();
  for (const method of METHODS) {
    const original = client[method];
    if (typeof original !== 'function') continue;
    originals.set(method, Object.prototype.hasOwnProperty.call(client, method) ? original : undefined);
    client[method] = function counted(this: unknown, ...args: unknown[]) {
      counts[method] += 1;
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    };
  }
  try {
    for (let i = 0; i < ops; i++) await op(i);
  } finally {
    for (const [method, own] of originals) {
      if (own === undefined) delete client[method];
      else client[method] = own;
    }
  }
  for (const method of METHODS) counts[method] /= ops;
  return counts;
}

/** Total RPCs of a count. */
export function totalRpcs(counts: RpcCounts): number {
  return METHODS.reduce((sum, m) => sum + counts[m], 0);
}

/** "lookup 3, commit 2" */
export function describeRpcs(counts: RpcCounts | undefined): string {
  if (!counts) return 'n/a';
  const parts = METHODS.filter((m) => counts[m] > 0).map((m) => `${m} ${fmt(counts[m])}`);
  return `${fmt(totalRpcs(counts))} (${parts.join(', ')})`;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

function gapicClient(datastore: Datastore): GapicClient | undefined {
  const clients = (datastore as unknown as { clients_?: Map<string, GapicClient> }).clients_;
  return clients instanceof Map ? clients.get('DatastoreClient') : undefined;
}

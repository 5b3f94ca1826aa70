/**
 * Counts the Datastore RPCs an operation sends, by method, on the generated client the store under
 * measurement was given (`test/support/datastore-spy.ts` records its calls). Used in an untimed
 * pass only.
 */
import { RPC_METHODS, type RpcMethod, type SpiedClient } from '../test/support/datastore-spy';

/** RPCs per method. */
export type RpcCounts = Record<RpcMethod, number>;

/**
 * Runs `ops` operations made by `op` (one after another) and returns the RPCs per operation that
 * `spy` saw. Returns undefined without a spy (what is measured goes through a client not recorded).
 */
export async function rpcsPerOp(spy: SpiedClient | undefined, ops: number, op: (i: number) => Promise<void>): Promise<RpcCounts | undefined> {
  const start = spy?.calls.length ?? 0;
  for (let i = 0; i < ops; i++) await op(i);
  if (!spy) return undefined;
  const counts = Object.fromEntries(RPC_METHODS.map((m) => [m, 0])) as RpcCounts;
  for (const method of spy.calls.slice(start)) counts[method] += 1;
  for (const method of RPC_METHODS) counts[method] /= ops;
  return counts;
}

/** Total RPCs of a count. */
export function totalRpcs(counts: RpcCounts): number {
  return RPC_METHODS.reduce((sum, m) => sum + counts[m], 0);
}

/** "lookup 3, commit 2" */
export function describeRpcs(counts: RpcCounts | undefined): string {
  if (!counts) return 'n/a';
  const parts = RPC_METHODS.filter((m) => counts[m] > 0).map((m) => `${m} ${fmt(counts[m])}`);
  return `${fmt(totalRpcs(counts))} (${parts.join(', ')})`;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

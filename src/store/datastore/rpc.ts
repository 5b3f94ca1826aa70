/**
 * The Datastore API as the store calls it: the five RPCs of the generated `v1.DatastoreClient`
 * that `@google-cloud/datastore` exports (lookup, beginTransaction, commit, rollback, runQuery),
 * with the project and database filled in, every call bounded by one deadline (the client's own
 * retries included), and every failure classified once, here, into the store's errors.
 */
import type { Datastore, DatastoreClient } from '@google-cloud/datastore';
import { call, unavailable } from './errors';
import type { RawEntity, RawKey, RawValue } from './protos';

/** `ReadOptions`: read in a transaction, or begin one with this read. */
export type ReadOptions = { transaction: Uint8Array } | { newTransaction: { readWrite: Record<string, never> } };

/** One mutation of a commit. */
export type Mutation = { upsert: RawEntity; baseVersion?: string } | { delete: RawKey; baseVersion?: string };

/** What a lookup answers (int64s as decimal strings, as the client decodes them). */
export interface LookupResponse {
  found?: { entity?: RawEntity | null; version?: string | number | null }[] | null;
  missing?: unknown[] | null;
  deferred?: RawKey[] | null;
  transaction?: Uint8Array | null;
}

/** What a commit answers: one result per mutation. */
export interface CommitResponse {
  mutationResults?: { version?: string | number | null; conflictDetected?: boolean | null }[] | null;
}

/** A filter as `Query.filter` takes it (only what the store uses). */
export type RawFilter =
  | { propertyFilter: { property: { name: string }; op: 'EQUAL' | 'LESS_THAN' | 'GREATER_THAN_OR_EQUAL'; value: RawValue } }
  | { compositeFilter: { op: 'AND'; filters: RawFilter[] } };

/** A query as `RunQueryRequest.query` takes it (only what the store uses). */
export interface RawQuery {
  kind: { name: string }[];
  projection?: { property: { name: string } }[];
  filter?: RawFilter;
  order?: { property: { name: string }; direction: 'ASCENDING' | 'DESCENDING' }[];
  limit?: { value: number };
  startCursor?: Uint8Array;
}

/** One batch of query results. */
export interface QueryBatch {
  entityResults?: { entity?: RawEntity | null }[] | null;
  endCursor?: Uint8Array | null;
  moreResults?: string | null;
}

/** The calls a `DatastoreStore` makes, on one generated client. */
export class DatastoreRpc {
  private projectId?: Promise<string>;

  constructor(
    private readonly client: DatastoreClient,
    private readonly datastore: Datastore,
    /** The deadline of each call, ms, the client's retries included. */
    readonly timeoutMs: number,
  ) {}

  /** The same calls with another deadline. */
  withTimeout(timeoutMs: number): DatastoreRpc {
    const rpc = new DatastoreRpc(this.client, this.datastore, timeoutMs);
    rpc.projectId = this.projectId;
    return rpc;
  }

  /** The project id: the client's, else the one its credentials name (resolved once). */
  project(): Promise<string> {
    this.projectId ??= call('project id lookup', async () => {
      const given = this.datastore.options?.projectId;
      return given ? given : this.datastore.getProjectId();
    });
    this.projectId.catch(() => (this.projectId = undefined));
    return this.projectId;
  }

  async lookup(keys: RawKey[], readOptions?: ReadOptions): Promise<LookupResponse> {
    const request = { ...(await this.target()), keys, ...(readOptions && { readOptions }) };
    return call('lookup', async () => (await this.client.lookup(request, await this.options()))[0] as LookupResponse);
  }

  async beginTransaction(): Promise<Uint8Array> {
    const request = { ...(await this.target()), transactionOptions: { readWrite: {} } };
    const [response] = await call('begin transaction', async () => this.client.beginTransaction(request, await this.options()));
    const id = response.transaction;
    if (!id || id.length === 0) throw unavailable('begin transaction', 'it returned no transaction');
    return id as Uint8Array;
  }

  /** Commits `mutations`: in `transaction`, or, without one, non-transactionally. */
  async commit(mutations: Mutation[], transaction?: Uint8Array): Promise<CommitResponse> {
    const mode = transaction ? { mode: 'TRANSACTIONAL' as const, transaction } : { mode: 'NON_TRANSACTIONAL' as const };
    const request = { ...(await this.target()), ...mode, mutations };
    return call('commit', async () => (await this.client.commit(request, await this.options()))[0] as CommitResponse);
  }

  async rollback(transaction: Uint8Array): Promise<void> {
    const request = { ...(await this.target()), transaction };
    await call('rollback', async () => this.client.rollback(request, await this.options()));
  }

  /** One batch of `query`'s results in `namespace`. */
  async runQuery(namespace: string, query: RawQuery): Promise<QueryBatch> {
    const target = await this.target();
    const request = { ...target, partitionId: { projectId: target.projectId, databaseId: target.databaseId, namespaceId: namespace }, query };
    const [response] = await call('query', async () => this.client.runQuery(request, await this.options()));
    return (response.batch ?? {}) as QueryBatch;
  }

  /** `COUNT(*)` of `query` in `namespace`, up to `upTo`: one aggregation query. */
  async runCount(namespace: string, query: RawQuery, upTo: number): Promise<number> {
    const target = await this.target();
    const request = {
      ...target, partitionId: { projectId: target.projectId, databaseId: target.databaseId, namespaceId: namespace },
      aggregationQuery: { nestedQuery: query, aggregations: [{ alias: 'n', count: { upTo: { value: upTo } } }] },
    };
    const [response] = await call('count', async () => this.client.runAggregationQuery(request, await this.options()));
    const value = response.batch?.aggregationResults?.[0]?.aggregateProperties?.n?.integerValue;
    const n = Number(value);
    if (value === undefined || value === null || !Number.isSafeInteger(n) || n < 0) throw unavailable('count', 'it answered no count');
    return n;
  }

  private async target(): Promise<{ projectId: string; databaseId: string }> {
    return { projectId: await this.project(), databaseId: this.datastore.options?.databaseId ?? '' };
  }

  private async options(): Promise<{ timeout: number; otherArgs: { headers: Record<string, string> } }> {
    const headers = { 'google-cloud-resource-prefix': `projects/${await this.project()}` };
    return { timeout: this.timeoutMs, otherArgs: { headers } };
  }
}

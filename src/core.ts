/**
 * What the parts of the Locker (lease, attempt, outbox, middleware) need from it: the parsed
 * configuration, transactions retried on contention, events and alerts. The `Locker` implements it.
 */
import type { Key } from '@google-cloud/datastore';
import type { LockerEvents } from './events';
import type { Drain } from './step/drain';
import type { ConfigErrorLog } from './errors/faults';
import type { Config } from './config/options';
import type { SeenSteps } from './step/seen-steps';
import type { Telemetry } from './telemetry/telemetry';
import type { AlertEvent, Properties, Snapshot, StoreTransaction } from './types';

export interface Core {
  readonly config: Config;
  /** Logs the store's configuration errors at most once a minute. */
  readonly configErrors: ConfigErrorLog;
  /** What this process last saw of each entity's lock (see `seen-steps.ts`). */
  readonly seen: SeenSteps;
  /** OpenTelemetry spans and counters (see `telemetry/telemetry.ts`); inert without the API. */
  readonly telemetry: Telemetry;
  /** The attempts in flight, and whether new ones are taken (`shutdown()`). */
  readonly drain: Drain;
  /** Runs a read-check-write in a transaction, re-running it whole when it aborts on contention. */
  transact<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  emit<K extends keyof LockerEvents>(name: K, ...args: LockerEvents[K]): boolean;
  /** Sends an alert, bounded by `alertTimeout`; never throws (a failed send is logged). Resolves to whether the alerter took it. */
  alert(event: AlertEvent): Promise<boolean>;
  /** Compare-and-swap of an entity outside any transaction (see `Store.replaceIfUnchanged`), with the same index exclusions as `write`. */
  replace(key: Key, snapshot: Snapshot, properties: Properties): Promise<Snapshot | undefined>;
  /** Writes an entity in `tx`, keeping the lock fields and `excludeFromIndexes` out of indexes. */
  write(tx: StoreTransaction, key: Key, properties: Properties): void;
  /** `X-Lock-Key` for a key (with the project id once `ready` resolved). */
  encodeKey(key: Key): string;
  /** Resolves once the store's project id is known, or could not be (see `lookUpProjectId`). */
  readonly ready: Promise<void>;
  /**
   * Removes the ledger record `id` of a step that finished or failed for good, after its finishing
   * write and without holding up the answer (a failure is logged; the sweep clears what is left).
   */
  retire(key: Key, id: string | undefined): void;
}

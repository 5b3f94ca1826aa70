/**
 * The ledger records of finished steps, removed in groups (docs/design.md, section 5): a step's
 * record goes after its answer, so the removals of several steps can share one commit. A removal
 * waits at most {@link REMOVAL_DELAY_MS} for others to join it; a group is sent as soon as it holds
 * {@link MAX_REMOVALS} (Datastore's most mutations in one commit), and `drain()` (`shutdown()`)
 * sends what waits at once. A removal that fails, or never goes because the process died first,
 * leaves a record of a finished step, which the sweep clears; a failure is logged.
 *
 * A removal is conditional: a step's record id is the same each time that step of that chain is
 * scheduled, so the same step may be scheduled again before the removal lands (an entity restored
 * from a backup, its step re-run), in this process or another, and its new record must stay. A
 * record the finished step read (with its entity, when the task arrived) goes only while it is
 * still at the version read; any other only while its entity, read when the removal is sent, no
 * longer needs it (`recordNeeded`) and the record is still the one judged (`Store.retireLedgerMany`).
 * A store without `retireLedgerMany` removes each record in a transaction of its own that reads
 * its entity.
 */
import type { Key } from '@google-cloud/datastore';
import type { Logger, Store, StoreTransaction } from '../types';
import { realTimers, type Timer, type Timers } from '../config/timers';
import { keyPath } from '../keys/key-codec';
import { recordNeeded } from '../rules/ledger-record';
import type { LedgerRef } from '../types';

/** The most removals in one group: Datastore's most mutations in one commit. */
export const MAX_REMOVALS = 500;
/** The longest a removal waits for others to join its group, ms. */
export const REMOVAL_DELAY_MS = 10;

/** What the removals use: the store's removal of ledger records, the lock part's transactions (for a store without it), and the logger. */
export interface LedgerRemovalSettings {
  readonly records: Pick<Store, 'retireLedgerMany'>;
  readonly transact: <T>(fn: (tx: StoreTransaction) => Promise<T>) => Promise<T>;
  readonly logger: Logger;
}

/** Groups removals of ledger records into commits (see the file's comment). */
export class LedgerRemovals {
  private waiting: LedgerRef[] = [];
  private timer: Timer | undefined;
  private readonly sending = new Set<Promise<void>>();

  constructor(
    private readonly settings: LedgerRemovalSettings,
    private readonly timers: Timers = realTimers,
  ) {}

  /**
   * Removes the record `id` of `key`'s step, with others: within {@link REMOVAL_DELAY_MS}, or at
   * once when the group is full; only while it is still at `version` (the store's, as the step read
   * it), or, without one, only while its entity no longer needs it.
   */
  add(key: Key, id: string, version?: unknown): void {
    this.waiting.push(version === undefined ? { key, id } : { key, id, version });
    if (this.waiting.length >= MAX_REMOVALS) this.send();
    else if (!this.timer) {
      this.timer = this.timers.setTimeout(() => this.send(), REMOVAL_DELAY_MS);
      this.timer.unref();
    }
  }

  /** How many removals wait for their group to be sent. */
  get pending(): number {
    return this.waiting.length;
  }

  /** Sends what waits at once, and resolves once every group sent has settled. */
  async drain(): Promise<void> {
    this.send();
    await Promise.all([...this.sending]);
  }

  /** Sends every waiting removal, in groups of at most {@link MAX_REMOVALS}. */
  private send(): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0, MAX_REMOVALS);
      const sent = this.remove(group).finally(() => this.sending.delete(sent));
      this.sending.add(sent);
    }
  }

  /** One lookup and one commit where the store can (`retireLedgerMany`), else a transaction each. */
  private async remove(group: LedgerRef[]): Promise<void> {
    const { records, transact, logger } = this.settings;
    try {
      if (records.retireLedgerMany) await records.retireLedgerMany(group, recordNeeded);
      else await Promise.all(group.map((r) => transact(async (tx) => {
        const [entity, record] = await Promise.all([tx.get(r.key), tx.getLedger(r.key, r.id)]);
        if (record && !recordNeeded(entity, r.id)) tx.deleteLedger(r.key, r.id);
      })));
    } catch (error) {
      logger.warn('ledger records not removed; the sweep clears them', {
        records: group.length, first: `${keyPath(group[0]!.key)} ${group[0]!.id}`, error: String(error),
      });
    }
  }
}

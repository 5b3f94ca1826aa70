/**
 * The ledger of live steps (docs/design.md, sections 5 and 15): a step's record is committed with
 * the step, names the task that carries it, and stays while the step is live. This part claims a
 * record's next send (a compare-and-swap on the task it names and its send count, so two sweeps
 * never both re-deliver one send), retires the record of a step that ended without holding up the
 * answer (several steps' removals in one commit), clears for the sweep a record whose step is
 * no longer live (read again with the entity, in one transaction), and lets `shutdown()` send and
 * wait for the removals.
 */
import type { Key } from '@google-cloud/datastore';
import { nextSend } from '../rules/ledger-record';
import { keyPath } from '../keys/key-codec';
import { readLock } from '../rules/lock-fields';
import { StepState, type LedgerRecord, type Properties, type StoreTransaction } from '../types';
import type { StoreReads } from '../store/reads';
import type { Timers } from '../config/timers';
import { LedgerRemovals, type LedgerRemovalSettings } from './ledger-removals';

/** Runs a read-check-write in a transaction, re-run whole on contention (the lock writer's `transact`). */
export type Transact = <T>(fn: (tx: StoreTransaction) => Promise<T>) => Promise<T>;

/** The ledger part (see the file's comment); built once per Locker. */
export class Ledger {
  /** The removals of finished steps' records, grouped into commits. */
  private readonly removals: LedgerRemovals;

  constructor(
    private readonly settings: Omit<LedgerRemovalSettings, 'transact'> & { readonly reads: Pick<StoreReads, 'ledgers'> },
    private readonly transact: Transact,
    timers?: Timers,
  ) {
    this.removals = new LedgerRemovals({ ...settings, transact }, timers);
  }

  /**
   * Replaces the record with `change(record)` only while it still names the same task and send
   * (a compare-and-swap in a transaction); resolves to what was written, or undefined when the
   * record changed or is gone.
   */
  update(record: LedgerRecord, change: (r: LedgerRecord) => LedgerRecord): Promise<LedgerRecord | undefined> {
    return this.transact(async (tx) => {
      const current = await tx.getLedger(record.key, record.id);
      if (!current || current.task !== record.task || current.sends !== record.sends) return undefined;
      const next = change(current);
      tx.putLedger(next);
      return next;
    });
  }

  /** Claims the record's next send (`nextSend`), looked at again `interval` ms from `now`; undefined when another claimed it first. */
  claimNextSend(record: LedgerRecord, now: number, interval: number): Promise<LedgerRecord | undefined> {
    return this.update(record, (r) => nextSend(r, now, interval));
  }

  /**
   * Removes the ledger record `id` of a step that finished or failed for good, after its finishing
   * write and without holding up the answer, grouped with other steps' removals in one commit
   * (`ledger-removals.ts`; a failure is logged; the sweep clears what is left): only while it is
   * still at `version`, when the step read it, else only while its entity no longer needs it.
   */
  retire(key: Key, id: string | undefined, version?: unknown): void {
    if (id !== undefined) this.removals.add(key, id, version);
  }

  /**
   * Keeps the ledger record `id` of a chain that finished with alerts still unmarked (its finishing
   * write kept them), due by `soon` at the latest, so that the sweep sends them; never throws.
   */
  async keepForAlerts(key: Key, id: string | undefined, soon: Date): Promise<void> {
    if (id === undefined) return;
    try {
      await this.transact(async (tx) => {
        const record = await tx.getLedger(key, id);
        if (record && record.due.getTime() > soon.getTime()) tx.putLedger({ ...record, due: soon });
      });
    } catch (error) {
      this.settings.logger.warn('ledger record of a step with unsent alerts not brought forward; the sweep sends them when it comes due', {
        key: keyPath(key), task: id, error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /**
   * The sweep's clearing of a record no longer needed: removes it in a transaction that reads the
   * entity and the record again, and only while `why(entity, record)` still names a reason (and the
   * record still names the same task and send). Resolves to the reason, or undefined when the
   * record was kept: the step came alive meanwhile. A batch kickoff writes its records before its
   * entities (`replaceMany` on Datastore), so a sweep may read a record whose entity is not written
   * yet; the entity written after the sweep's read but before this transaction keeps the record.
   */
  clear(record: LedgerRecord, why: (entity: Properties | undefined, record: LedgerRecord) => string | undefined): Promise<string | undefined> {
    return this.transact(async (tx) => {
      const [entity, current] = await Promise.all([tx.get(record.key), tx.getLedger(record.key, record.id)]);
      if (!current || current.task !== record.task || current.sends !== record.sends) return undefined;
      const reason = why(entity, current);
      if (reason !== undefined) tx.deleteLedger(record.key, record.id);
      return reason;
    });
  }

  /**
   * Puts back the records of kicked-off steps that lost theirs: each of `records` names a step
   * that a kickoff found started on its entity (an earlier write, answered by a store fault, that
   * landed after all). Its record was committed before the entity, so a sweep may have found the
   * entity absent meanwhile and cleared it; a scheduled step without its record is never delivered
   * again if its task is lost. Each missing record (looked up as `StoreReads.ledgers()` does: a
   * lookup per 1,000 where the store has `readLedgerMany`) is written again, due now, in a transaction that reads the entity and the
   * record again: only while the entity is still scheduled at that step and the record still
   * absent. Resolves to how many were put back.
   */
  async restore(records: readonly LedgerRecord[], now: Date): Promise<number> {
    if (records.length === 0) return 0;
    const found = await this.settings.reads.ledgers(records.map((r) => ({ key: r.key, id: r.id })));
    const missing = records.filter((_, i) => !found[i]);
    const restored = await Promise.all(missing.map((record) => this.transact(async (tx) => {
      const [entity, current] = await Promise.all([tx.get(record.key), tx.getLedger(record.key, record.id)]);
      const lock = entity && readLock(entity);
      if (current || !lock || lock.task !== record.id || lock.seq !== record.seq || lock.state !== StepState.scheduled) return false;
      tx.putLedger({ ...record, due: now });
      return true;
    })));
    restored.forEach((put, i) => {
      if (put) this.settings.logger.warn('ledger record of a started step put back: it was cleared while its kickoff was unanswered', { key: keyPath(missing[i]!.key), task: missing[i]!.id });
    });
    return restored.filter(Boolean).length;
  }

  /** Sends the removals still waiting for their group, and resolves once every removal settled. */
  drain(): Promise<void> {
    return this.removals.drain();
  }
}

/**
 * Ledger records as entities, shared by every store: kind `LockerOutbox` (a store option), in the
 * namespace of the entity whose step they carry (so both commit in one transaction), named by the
 * record's id. Only `due` is indexed: the sweep's query is `due <= now` ordered by `due`, which
 * Datastore's built-in single-property index serves. The body may be up to Cloud Tasks' 100 KB,
 * so nothing else is indexed.
 *
 * Reading never trusts what is stored: a record with a missing or mistyped field is reported as
 * malformed (with why), never thrown at the sweep.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import type { LedgerRecord, Properties } from '../types';
import { copyKey } from '../keys/keys';

/** The default kind of ledger records. */
export const LEDGER_KIND = 'LockerOutbox';

/** Every stored field but `due`. */
export const LEDGER_UNINDEXED: readonly string[] = Object.freeze([
  'key', 'seq', 'chain', 'path', 'body', 'scheduleTime', 'createdAt', 'task', 'sends', 'sentAt', 'failures',
]);

/** The key of ledger record `id` for an entity in `namespace`. */
export function ledgerKey(kind: string, namespace: string | undefined, id: string): Key {
  return new Key(namespace ? { namespace, path: [kind, id] } : { path: [kind, id] });
}

/** The properties to store for a record. */
export function ledgerProperties(record: LedgerRecord): Properties {
  const props: Properties = {
    key: copyKey(record.key),
    seq: record.seq,
    chain: record.chain,
    path: record.path,
    body: record.body,
    createdAt: new Date(record.createdAt.getTime()),
    task: record.task,
    sends: record.sends,
    sentAt: new Date(record.sentAt.getTime()),
    failures: record.failures,
    due: new Date(record.due.getTime()),
  };
  if (record.scheduleTime !== undefined) props.scheduleTime = new Date(record.scheduleTime.getTime());
  return props;
}

/** The record stored as `props` under `id`, or why it is not one. */
export function readLedger(id: string, props: Properties): LedgerRecord | { malformed: string } {
  const { key, seq, chain, path, body, scheduleTime, createdAt, task, sends, sentAt, failures, due } = props;
  const wrong = (field: string): { malformed: string } => ({ malformed: `its ${field} is missing or not of the right type` });
  if (!isKey(key)) return wrong('key');
  if (!count(seq) || seq < 1) return wrong('seq');
  if (typeof chain !== 'string' || chain === '') return wrong('chain');
  if (typeof path !== 'string' || !path.startsWith('/')) return wrong('path');
  if (typeof body !== 'string') return wrong('body');
  if (!isDate(createdAt)) return wrong('createdAt');
  if (typeof task !== 'string' || task === '') return wrong('task');
  if (!count(sends)) return wrong('sends');
  if (!isDate(sentAt)) return wrong('sentAt');
  if (!count(failures)) return wrong('failures');
  if (!isDate(due)) return wrong('due');
  if (scheduleTime !== undefined && scheduleTime !== null && !isDate(scheduleTime)) return wrong('scheduleTime');
  const record: LedgerRecord = { id, key: copyKey(key), seq, chain, path, body, createdAt, task, sends, sentAt, failures, due };
  if (isDate(scheduleTime)) record.scheduleTime = scheduleTime;
  return record;
}

/** A copy of a record that the caller cannot change. */
export function copyLedger(record: LedgerRecord): LedgerRecord {
  const copy = readLedger(record.id, ledgerProperties(record));
  if ('malformed' in copy) throw new TypeError(`ledger record ${record.id} is malformed: ${copy.malformed}`);
  return copy;
}

/** Oldest due first; ties by namespace and id, so the order is stable. */
export function dueFirst(a: LedgerRecord, b: LedgerRecord): number {
  const byDue = a.due.getTime() - b.due.getTime();
  if (byDue !== 0) return byDue;
  const an = `${a.key.namespace ?? ''}\u0000${a.id}`;
  const bn = `${b.key.namespace ?? ''}\u0000${b.id}`;
  return an < bn ? -1 : an > bn ? 1 : 0;
}

function isKey(value: unknown): value is Key {
  return typeof value === 'object' && value !== null && Datastore.isKey(value);
}

function isDate(value: unknown): value is Date {
  return value instanceof Date && !Number.isNaN(value.getTime());
}

function count(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Outbox records as Datastore entities: kind `outboxKind`, in the namespace of the entity whose
 * step they carry, named by task name. Only `createdAt` is indexed (the sweeper queries it); the
 * body may be up to Cloud Tasks' 100 KB, so nothing else is.
 */
import { Datastore, Key } from '@google-cloud/datastore';
import type { OutboxRecord } from '../types';
import { copyKey } from './keys';
import { keyPath } from '../key-path';

/** Every stored field but `createdAt`. */
const UNINDEXED = ['key', 'seq', 'path', 'body', 'scheduleTime'];

/** The key of an outbox record. */
export function outboxKey(kind: string, record: OutboxRecord): Key {
  const namespace = record.key.namespace;
  return new Key(namespace ? { namespace, path: [kind, record.name] } : { path: [kind, record.name] });
}

/** The entity to save for a record, in the shape `Transaction.save` takes. */
export function outboxEntity(kind: string, record: OutboxRecord) {
  const data: Record<string, unknown> = {
    key: copyKey(record.key),
    seq: record.seq,
    path: record.path,
    body: record.body,
    createdAt: new Date(record.createdAt.getTime()),
  };
  if (record.scheduleTime !== undefined) data.scheduleTime = new Date(record.scheduleTime.getTime());
  return { key: outboxKey(kind, record), data, excludeFromIndexes: UNINDEXED };
}

/** The record an outbox entity read by a query stands for. */
export function outboxRecord(entity: Record<string | symbol, unknown>): OutboxRecord {
  const own = entity[Datastore.KEY];
  const { key, seq, path, body, createdAt, scheduleTime } = entity;
  const name = isKey(own) ? own.name : undefined;
  if (
    name === undefined ||
    !isKey(key) ||
    typeof seq !== 'number' ||
    typeof path !== 'string' ||
    typeof body !== 'string' ||
    !(createdAt instanceof Date)
  ) {
    throw new TypeError(`the entity ${isKey(own) ? keyPath(own) : '(no key)'} is not an outbox record`);
  }
  const record: OutboxRecord = { name, key, seq, path, body, createdAt };
  if (scheduleTime instanceof Date) record.scheduleTime = scheduleTime;
  return record;
}

function isKey(value: unknown): value is Key {
  return typeof value === 'object' && value !== null && Datastore.isKey(value);
}

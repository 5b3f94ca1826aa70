/**
 * The benchmark's entities: keys that never collide, and the stored forms a step, a finished step
 * and a held step start from. Seeded in batches outside every timed part.
 */
import type { Datastore, Key } from '@google-cloud/datastore';
import { UNINDEXED_LOCK_FIELDS } from '../src/rules/lock-fields';
import { taskName } from '../src/rules/ledger-record';
import { LEDGER_KIND, LEDGER_UNINDEXED, ledgerKey, ledgerProperties } from '../src/store/ledger-entity';
import { StepState, type LedgerRecord, type Properties } from '../src/types';

export const KIND = 'BenchCounter';

/** Hands out fresh keys in one namespace. */
export class KeySource {
  private next = 0;
  constructor(
    private readonly datastore: Datastore,
    readonly namespace: string,
  ) {}

  key(prefix: string): Key {
    this.next += 1;
    return this.datastore.key({ namespace: this.namespace, path: [KIND, `${prefix}-${this.next}`] });
  }

  keys(prefix: string, count: number): Key[] {
    return Array.from({ length: count }, () => this.key(prefix));
  }
}

/** A step scheduled and free: the lease is taken on arrival. */
export function scheduledStep(seq: number, now = new Date()): Properties {
  return { count: 0, label: 'bench', lock_ts: now, lock_req: '', lock_seq: seq, lock_try: 0, lock_state: StepState.scheduled };
}

/** A chain whose step `seq - 1` finished: a task for that step is a duplicate. */
export function finishedStep(seq: number, now = new Date()): Properties {
  return { ...scheduledStep(seq, now), lock_state: StepState.complete };
}

/** A step another attempt holds with a fresh lease (`lock_ts` now). */
export function heldStep(seq: number, now = new Date()): Properties {
  return { ...scheduledStep(seq, now), lock_req: 'another-attempt' };
}

/** Lock fields stay out of indexes, as the Locker writes them. */
export const EXCLUDED: string[] = [...UNINDEXED_LOCK_FIELDS];

/** Writes `props(i)` to every key, 500 per commit, without transactions. */
export async function seed(datastore: Datastore, keys: readonly Key[], props: (i: number) => Properties): Promise<void> {
  for (let start = 0; start < keys.length; start += 500) {
    const batch = keys.slice(start, start + 500).map((key, j) => ({ key, data: props(start + j), excludeFromIndexes: EXCLUDED }));
    await datastore.upsert(batch);
  }
}

/** The chain of the steps seeded with their records (`seedWithRecords`): their tasks name it. */
export const BENCH_CHAIN = 'bench';

/**
 * Scheduled steps as `schedule()` leaves them: each entity is step 1 of chain {@link BENCH_CHAIN}
 * and names its ledger record (`lock_task`, the step's task name), and the record is stored. A
 * task sent with the chain (`X-Lock-Chain`) is checked against the record in its first lookup, and
 * the step removes the record after its answer at the version read, as a real step does.
 */
export async function seedWithRecords(datastore: Datastore, keys: readonly Key[]): Promise<void> {
  const now = new Date();
  const taskOf = (key: Key): string => taskName(key, BENCH_CHAIN, 1);
  await seed(datastore, keys, (i) => ({ ...scheduledStep(1, now), lock_chain: BENCH_CHAIN, lock_task: taskOf(keys[i]!) }));
  const due = new Date(now.getTime() + 3_600_000);
  for (let start = 0; start < keys.length; start += 500) {
    const batch = keys.slice(start, start + 500).map((key) => {
      const id = taskOf(key);
      const record: LedgerRecord = { id, key, seq: 1, chain: BENCH_CHAIN, path: '/task', body: '', createdAt: now, task: id, sends: 1, sentAt: now, failures: 0, due };
      return { key: ledgerKey(LEDGER_KIND, key.namespace, id), data: ledgerProperties(record), excludeFromIndexes: [...LEDGER_UNINDEXED] };
    });
    await datastore.upsert(batch);
  }
}

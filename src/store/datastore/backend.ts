/**
 * Knowing the backend: what a Datastore backend really does with the two optimisations the store
 * relies on, checked once per store (`BackendChecks`, which the store holds) before its first
 * compare-and-swap or transaction, instead of trusting documentation:
 *
 * - conditional writes: the store writes a scratch entity of its own kind (`LockerProbe`, a random
 *   name, default namespace) at `baseVersion` 0, the version of an absent entity (must apply: a
 *   batched kickoff writes new entities so), replaces it at the version written (must apply),
 *   replaces it again at that now stale version (must report `conflictDetected`), and deletes it. A backend that
 *   applies the stale write, or reports no versions, ignores `Mutation.base_version`: fencing would
 *   silently not hold, so compare-and-swaps run as transactions there.
 * - begin-with-first-read: a transaction begun by a lookup (`ReadOptions.newTransaction`) of a
 *   scratch key that does not exist commits a delete of it (writing nothing). A backend that aborts
 *   that commit (the Firestore emulator leaves the key locked: "Transaction lock timeout") cannot
 *   use it, so transactions begin with `beginTransaction` there.
 *
 * Each finding that turns an optimisation off is logged once, with why. An option given to the
 * store overrides its check (which is then not run). The check is usually a client's first call,
 * which connects (and authenticates) first, so its calls get {@link CHECK_TIMEOUT_MS} at least. A
 * check that fails for another reason (the backend unreachable) fails the operation that needed
 * it, and runs again next time.
 */
import { randomBytes } from 'node:crypto';
import { Key, type Datastore } from '@google-cloud/datastore';
import { ContentionError } from '../../errors/errors';
import type { Logger } from '../../types';
import { ABSENT_VERSION, commitUpsert, rollBack } from './commit';
import { BEGIN_TRANSACTION, lookup } from './lookup';
import { keyToProto, type RawEntity } from './protos';
import type { DatastoreRpc } from './rpc';

/** How the store talks to its backend. */
export interface Backend {
  /** `replaceIfUnchanged` is one commit with `baseVersion` (else a transaction). */
  conditionalWrites: boolean;
  /** A transaction begins with its first lookup (else with `beginTransaction`). */
  beginWithFirstRead: boolean;
}

/** The deadline of each call of the check, ms, unless the store's own is longer. */
export const CHECK_TIMEOUT_MS = 30_000;

/** The kind of the scratch entities: no user kind, never indexed by the library's queries. */
export const PROBE_KIND = 'LockerProbe';

/** Where a check runs. */
export interface ProbeTarget {
  rpc: DatastoreRpc;
  datastore: Datastore;
  logger: Logger;
}

/** What the checks found for one store; a check that throws is forgotten, so it runs again. */
export class BackendChecks {
  private readonly found = new Map<keyof Backend, Promise<boolean>>();

  /** The backend: the overrides, and what the checks find for the rest. */
  async backendOf(store: ProbeTarget, overrides: Partial<Backend>): Promise<Backend> {
    const target = { ...store, rpc: store.rpc.withTimeout(Math.max(store.rpc.timeoutMs, CHECK_TIMEOUT_MS)) };
    const [conditionalWrites, beginWithFirstRead] = await Promise.all([
      overrides.conditionalWrites ?? this.once('conditionalWrites', () => checkConditionalWrites(target)),
      overrides.beginWithFirstRead ?? this.once('beginWithFirstRead', () => checkBeginWithFirstRead(target)),
    ]);
    return { conditionalWrites, beginWithFirstRead };
  }

  /** Runs `check` once; a check that throws is forgotten, so it runs again. */
  private once(what: keyof Backend, check: () => Promise<boolean>): Promise<boolean> {
    let result = this.found.get(what);
    if (!result) {
      result = check();
      this.found.set(what, result);
      result.catch(() => this.found.delete(what));
    }
    return result;
  }
}

/** True when a stale `baseVersion` is refused (and a fresh one applied). */
async function checkConditionalWrites({ rpc, logger }: ProbeTarget): Promise<boolean> {
  const key = scratchKey('base-version');
  const entity = (step: number): RawEntity => ({ key: keyToProto(key), properties: { step: { integerValue: String(step) } } });
  const created = await commitUpsert(rpc, entity(0), ABSENT_VERSION);
  try {
    const applied = !created.conflictDetected && created.version !== undefined;
    const fresh = applied ? await commitUpsert(rpc, entity(1), created.version) : undefined;
    const stale = applied ? await commitUpsert(rpc, entity(2), created.version) : undefined;
    const honoured = fresh?.conflictDetected === false && stale?.conflictDetected === true;
    if (!honoured) {
      logger.warn(
        `DatastoreStore: this Datastore ${applied ? 'does not refuse a write at a stale version' : 'refuses a write at version 0 (absent) to a new entity'} (Mutation.base_version), ` +
          'so compare-and-swaps run as transactions (two round trips instead of one). ' +
          'Set conditionalWrites to skip this check.',
        { reported: describe(created, fresh, stale) },
      );
    }
    return honoured;
  } finally {
    await rpc.commit([{ delete: keyToProto(key) }]).catch(() => undefined);
  }
}

/** True when a transaction begun by a lookup can commit. */
async function checkBeginWithFirstRead({ rpc, logger }: ProbeTarget): Promise<boolean> {
  const key = scratchKey('first-read');
  const { transaction } = await lookup(rpc, key, BEGIN_TRANSACTION);
  if (!transaction) {
    logger.warn('DatastoreStore: a lookup did not begin the transaction it was asked to, so transactions begin with beginTransaction.');
    return false;
  }
  try {
    await rpc.commit([{ delete: keyToProto(key) }], transaction);
    return true;
  } catch (error) {
    await rollBack(rpc, transaction);
    if (!(error instanceof ContentionError)) throw error;
    logger.warn(
      'DatastoreStore: a transaction begun by its first read could not commit ' +
        `(${error.message}; the Firestore emulator leaves the key locked), ` +
        'so transactions begin with beginTransaction (one more round trip). Set beginWithFirstRead to skip this check.',
    );
    return false;
  }
}

function scratchKey(purpose: string): Key {
  return new Key({ path: [PROBE_KIND, `${purpose}-${randomBytes(12).toString('hex')}`] });
}

function describe(...outcomes: ({ version?: string; conflictDetected: boolean } | undefined)[]): string {
  return outcomes.map((o) => (o ? `version ${o.version ?? 'none'}${o.conflictDetected ? ' conflict' : ''}` : 'not sent')).join(', ');
}

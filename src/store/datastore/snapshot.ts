/**
 * Snapshots of a `DatastoreStore`: the properties of an entity as a read hands them out, and, as
 * the opaque `version`, an {@link EntityVersion}: the entity's version (`EntityResult.version`,
 * what `Mutation.base_version` is compared with) and the shape a faithful write-back needs.
 */
import { StoreUnavailableError } from '../../errors/errors';
import type { Snapshot } from '../../types';
import { decodeEntity, type RawEntity, type Shape } from './protos';

/** The `version` of a `DatastoreStore` snapshot. */
export class EntityVersion {
  constructor(
    /** The entity's version on the server, an int64 in decimal. */
    readonly version: string,
    /** Where the entity had integral doubles and unindexed values. */
    readonly shape: Shape,
  ) {
    Object.freeze(this);
  }
}

/**
 * The snapshot of `entity` at `version`: an entity a lookup found, or one this store just wrote
 * (then exactly what a read of it would return).
 */
export function snapshotOf(entity: RawEntity, version: string | undefined, what: string): Snapshot {
  if (version === undefined || version === '') {
    throw new StoreUnavailableError(`Datastore ${what} returned no entity version`);
  }
  const { properties, ...shape } = decodeEntity(entity);
  return { properties, version: new EntityVersion(version, shape) };
}

/** The version of a snapshot this store made; a `TypeError` for any other. */
export function entityVersionOf(snapshot: Snapshot): EntityVersion {
  const version: unknown = snapshot?.version;
  if (version instanceof EntityVersion) return version;
  throw new TypeError('replaceIfUnchanged needs a snapshot that a DatastoreStore read or wrote');
}

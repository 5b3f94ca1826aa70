// The per-write index exclusions of the Datastore store, checked against what the client builds from
// the exhaustive form they replace: every name's four path variants plus the client's own search
// for large strings (`excludeLargeProperties`). The entity protos must be the same, value for value.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Datastore } from '@google-cloud/datastore';
import { entity } from '@google-cloud/datastore/build/src/entity';
import { extendExcludeFromIndexes } from '@google-cloud/datastore/build/src/utils/entity/extendExcludeFromIndexes';
import { indexExclusions } from '../src/store/datastore-values';
import { decodeEntity, type RawEntity } from '../src/store/datastore-protos';
import type { Properties } from '../src/types';

const NAMES = ['a', 'b', 'lock_req', 'lock_alerts', 'inner'] as const;

const arbLeaf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  fc.string({ maxLength: 8 }),
  fc.constantFrom('x'.repeat(1501), 'é'.repeat(751), 'é'.repeat(750), '€'.repeat(501)),
  fc.constantFrom(Buffer.alloc(3, 1), Buffer.alloc(1501, 2)),
  fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }),
  fc.constant(Datastore.double(2)),
);
// Objects as a store hands them to indexExclusions: copied, so with Object's prototype.
const plain = { maxKeys: 3, noNullPrototype: true };
const arbObject = fc.dictionary(fc.constantFrom(...NAMES), arbLeaf, plain);
const arbValue = fc.oneof(
  arbLeaf,
  arbObject,
  fc.array(fc.oneof(arbLeaf, arbObject), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom(...NAMES), fc.oneof(arbLeaf, arbObject, fc.array(arbLeaf, { maxLength: 2 })), plain),
);
const arbProperties: fc.Arbitrary<Properties> = fc.dictionary(fc.constantFrom(...NAMES), arbValue, { ...plain, maxKeys: 5 });
const arbNames = fc.subarray([...NAMES, 'absent']);

/** The proto the client builds from every name's four variants, as the store once sent them. */
function exhaustive(data: Properties, names: readonly string[]): RawEntity {
  const paths = names.flatMap((name) => [name, `${name}[]`, `${name}.*`, `${name}[].*`]);
  for (const [name, value] of Object.entries(data)) largeBlobs(value, name, paths);
  const object = { data, excludeFromIndexes: paths, excludeLargeProperties: true };
  extendExcludeFromIndexes(object);
  return entity.entityToEntityProto(object) as RawEntity;
}

function largeBlobs(value: unknown, path: string, paths: string[]): void {
  if (Buffer.isBuffer(value)) {
    if (value.length > 1500) paths.push(path);
  } else if (Array.isArray(value)) {
    for (const item of value) largeBlobs(item, `${path}[]`, paths);
  } else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [name, item] of Object.entries(value)) largeBlobs(item, `${path}.${name}`, paths);
  }
}

function built(data: Properties, names: readonly string[]): RawEntity {
  return entity.entityToEntityProto({ data, excludeFromIndexes: indexExclusions(data, names) }) as RawEntity;
}

describe('Datastore index exclusions', () => {
  it('exclude exactly what every name’s four variants and excludeLargeProperties exclude', () => {
    fc.assert(
      fc.property(arbProperties, arbNames, (data, names) => {
        assert.deepEqual(built(data, names), exhaustive(data, names));
      }),
      { numRuns: 2000 },
    );
  });

  it('give each name only the paths that reach its value', () => {
    const data = { lock_req: 'a', lock_alerts: ['x'], list: [{ k: 1 }], inner: { secret: 's' }, nothing: null };
    assert.deepEqual(indexExclusions(data, ['lock_req', 'lock_alerts', 'list', 'inner', 'nothing', 'absent']).sort(), [
      'inner',
      'inner.*',
      'list[]',
      'list[].*',
      'lock_alerts[]',
      'lock_req',
      'nothing',
    ]);
  });

  it('exclude strings and blobs over 1500 bytes wherever they are, and nothing shorter', () => {
    const long = 'é'.repeat(751); // 1502 bytes in 751 characters
    const data = { long, short: 'é'.repeat(750), list: [long, 'x'], inner: { blob: Buffer.alloc(1501), small: Buffer.alloc(1500) } };
    assert.deepEqual(indexExclusions(data, []).sort(), ['inner.blob', 'list[]', 'long']);
    const decoded = decodeEntity(built(data, []));
    assert.deepEqual([...decoded.unindexed].sort(), ['inner.blob', 'list[]', 'long']);
  });
});

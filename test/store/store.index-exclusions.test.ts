// The index settings the Datastore store encodes, checked value by value against their rule: a
// value is unindexed when it sits under a name the caller gave, when the read it came from found
// it unindexed, or when it is a string or blob over 1500 bytes; an array value itself never
// carries the flag (Datastore refuses it), its values do.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Datastore, Key } from '@google-cloud/datastore';
import { entityProto } from '../../src/store/datastore/encode';
import { decodeEntity, decodeEntityProperties, type RawValue } from '../../src/store/datastore/protos';
import { writeArgs } from '../../src/store/datastore/values';
import type { Properties } from '../../src/types';

const NAMES = ['a', 'b', 'lock_req', 'lock_alerts', 'inner', 'a.b'] as const;
const KEY = new Key({ path: ['Order', 'x'] });

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

function isLarge(value: RawValue): boolean {
  if (typeof value.stringValue === 'string') return Buffer.byteLength(value.stringValue) > 1500;
  return value.blobValue instanceof Uint8Array && value.blobValue.length > 1500;
}

/** Checks every value under `value` against the rule; `named` when a caller's name covers it. */
function checkValue(value: RawValue, named: boolean, where: string): void {
  if (value.arrayValue) {
    assert.equal(value.excludeFromIndexes ?? false, false, `${where}: an array value carries no flag`);
    value.arrayValue.values?.forEach((item, i) => checkValue(item, named, `${where}[${i}]`));
    return;
  }
  const expected = named || isLarge(value);
  assert.equal(value.excludeFromIndexes ?? false, expected, `${where}: excluded ${expected}`);
  for (const [name, inner] of Object.entries(value.entityValue?.properties ?? {})) checkValue(inner, named, `${where}.${name}`);
}

describe('Datastore index exclusions', () => {
  it('exclude exactly the values under the names given, and long strings and blobs', () => {
    fc.assert(
      fc.property(arbProperties, arbNames, (data, names) => {
        const entity = entityProto(writeArgs(KEY, data, names));
        for (const [name, value] of Object.entries(entity.properties ?? {})) checkValue(value, names.includes(name), name);
      }),
      { numRuns: 1000 },
    );
  });

  it('write back what a read found unindexed, and nothing more', () => {
    fc.assert(
      fc.property(arbProperties, arbNames, (data, names) => {
        const first = entityProto(writeArgs(KEY, data, names));
        const { properties, ...shape } = decodeEntity(first);
        const again = entityProto(writeArgs(KEY, properties, [], shape));
        assert.deepEqual(again, first, 'the same entity, flag for flag and type for type');
        assert.deepEqual(decodeEntityProperties(first), properties, 'a read without the shape hands out the same properties');
      }),
      { numRuns: 1000 },
    );
  });

  it('take a dotted name as one property, not as a path', () => {
    const entity = entityProto(writeArgs(KEY, { 'a.b': 1, a: { b: 2 } }, ['a.b']));
    assert.equal(entity.properties?.['a.b']?.excludeFromIndexes, true);
    assert.equal(entity.properties?.a?.entityValue?.properties?.b?.excludeFromIndexes ?? false, false);
  });

  it('exclude strings and blobs over 1500 bytes wherever they are, and nothing shorter', () => {
    const long = 'é'.repeat(751); // 1502 bytes in 751 characters
    const data = { long, short: 'é'.repeat(750), list: [long, 'x'], inner: { blob: Buffer.alloc(1501), small: Buffer.alloc(1500) } };
    const decoded = decodeEntity(entityProto(writeArgs(KEY, data, [])));
    assert.deepEqual([...decoded.unindexed].sort(), ['["inner","blob"]', '["list",0]', '["long"]']);
  });
});

/**
 * parseKeyPath reads back what keyPath writes, for every kind of key element (plain and quoted
 * kinds, numeric ids up to 2^63-1, names with quotes, slashes, colons and non-ASCII, ancestors),
 * and refuses anything else with a RangeError naming where.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, Key } from '@google-cloud/datastore';
import { parseKeyPath } from '../../src/keys/key-path-parse';
import { keyIdentity, keyPath } from '../../src/keys/key-path';

const KEYS: Key[] = [
  new Key({ path: ['Counter', 'counters-12'] }),
  new Key({ path: ['Order', 42] }),
  new Key({ path: ['Order', 42, 'Line', 'a'] }),
  new Key({ path: ['Order', Datastore.int('9223372036854775807')] }),
  new Key({ path: ['Order', Datastore.int('9007199254740993')] }),
  new Key({ path: ['My Kind', 'x'] }),
  new Key({ path: ['Kind"with:quote/slash', 'n'] }),
  new Key({ path: ['K', 'a "quoted" name/with:colon\\and backslash'] }),
  new Key({ path: ['K', 'ünïcødé ✓'] }),
  new Key({ path: ['K', '42'] }),
  new Key({ path: ['A', 1, 'B', 'b', 'C', 3] }),
];

describe('parseKeyPath', () => {
  for (const key of KEYS) {
    it(`reads back ${keyPath(key)}`, () => {
      const parsed = parseKeyPath(keyPath(key));
      assert.equal(keyPath(parsed), keyPath(key));
      assert.equal(keyIdentity(parsed), keyIdentity(key));
    });
  }

  it('puts the key in the namespace given', () => {
    const parsed = parseKeyPath('Order:7', 'tenant-a');
    assert.equal(parsed.namespace, 'tenant-a');
    assert.equal(keyIdentity(parsed), keyIdentity(new Key({ namespace: 'tenant-a', path: ['Order', 7] })));
  });

  it('tells a name from an id: "42" is a name, 42 an id', () => {
    assert.equal(parseKeyPath('K:"42"').name, '42');
    assert.equal(parseKeyPath('K:42').id, 42);
  });

  it('allows spaces around the whole path', () => {
    assert.equal(keyPath(parseKeyPath('  Counter:"counters-12" ')), 'Counter:"counters-12"');
  });

  for (const bad of ['', '   ', 'Order', 'Order:', 'Order:abc', 'Order:0', 'Order:042', 'Order:"a"/', 'Order:"a"x', 'Order:"unclosed',
    ':1', 'Order:9223372036854775808', 'Order:""', 'Or der:1', 'K:"\\q"', 'x'.repeat(1_501)]) {
    it(`refuses ${JSON.stringify(bad.slice(0, 40))}`, () => {
      assert.throws(() => parseKeyPath(bad), RangeError);
    });
  }
});

/** Keys as text: one form for people and logs, and an identity that never confuses two keys. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Datastore } from '@google-cloud/datastore';
import { keyIdentity, keyPath } from '../../src/keys/key-path';

const ds = new Datastore({ projectId: 'my-project' });

describe('keyPath and keyIdentity', () => {
  it('writes kinds, numeric ids and quoted names, root first', () => {
    assert.equal(keyPath(ds.key(['Order', 42, 'Line', 'a'])), 'Order:42/Line:"a"');
    assert.equal(keyPath(ds.key(['Order'])), 'Order:?');
  });

  it('quotes a kind that holds separators, so different keys never read alike', () => {
    const two = ds.key(['X', 1, 'Y', 2]);
    const one = ds.key(['X:1/Y', 2]);
    assert.equal(keyPath(one), '"X:1/Y":2');
    assert.notEqual(keyIdentity(one), keyIdentity(two));
  });

  it('is one identity for an id given as a number or a string, and keeps ids apart from names and namespaces', () => {
    assert.equal(keyIdentity(ds.key(['A', 1])), keyIdentity(ds.key(['A', ds.int('1')])));
    assert.notEqual(keyIdentity(ds.key(['A', 1])), keyIdentity(ds.key(['A', '1'])));
    assert.notEqual(keyIdentity(ds.key(['A', 1])), keyIdentity(ds.key({ namespace: 'n', path: ['A', 1] })));
  });

  it('refuses an incomplete key as an identity', () => {
    assert.throws(() => keyIdentity(ds.key(['Order', 1, 'Line'])), /neither an id nor a name/);
  });

  it('gives different identities to different keys (property)', () => {
    const element = fc.tuple(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.integer({ min: 1, max: 1e6 }), fc.string({ minLength: 1, maxLength: 6 })));
    const path = fc.array(element, { minLength: 1, maxLength: 3 }).map((els) => els.flat());
    fc.assert(
      fc.property(path, path, (a, b) => {
        const same = JSON.stringify(a) === JSON.stringify(b);
        return same === (keyIdentity(ds.key(a)) === keyIdentity(ds.key(b)));
      }),
    );
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Datastore } from '@google-cloud/datastore';
import { checkDeliverable, decodeKey, encodeKey, keyPath } from '../../src/keys/key-codec';
import { BadRequestError } from '../../src/errors/errors';

const ds = new Datastore({ projectId: 'my-project' });

describe('key codec: the legacy url-safe encoding of X-Lock-Key', () => {
  it('encodes exactly as @google-cloud/datastore keyToLegacyUrlSafe does (the Go/App Engine format)', async () => {
    const keys = [
      ds.key(['Counter', 42]),
      ds.key(['Order', 'a-b', 'Line', 7]),
      ds.key({ namespace: 'tenant-1', path: ['Counter', 'x'] }),
      ds.key(['Ünïcode', 'naïve ✓']),
    ];
    for (const key of keys) {
      const [theirs] = await ds.keyToLegacyUrlSafe(key, 's~');
      assert.equal(encodeKey(key, 's~my-project'), theirs, keyPath(key));
    }
  });

  it('encodes byte for byte as keyToLegacyUrlSafe for any ids (one byte to 2^53) and long names (property)', async () => {
    const id = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 2 ** 31 - 2, max: 2 ** 31 + 2 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
    const name = fc.string({ minLength: 1, maxLength: 300 });
    await fc.assert(fc.asyncProperty(
      fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 40 }), fc.oneof(id, name)), { minLength: 1, maxLength: 5 }),
      fc.option(fc.stringMatching(/^[A-Za-z0-9._-]{1,100}$/), { nil: undefined }),
      async (elements, namespace) => {
        const key = ds.key({ namespace, path: elements.flat() });
        const [theirs] = await ds.keyToLegacyUrlSafe(key, 's~');
        assert.equal(encodeKey(key, 's~my-project'), theirs);
      },
    ), { numRuns: 200 });
  });

  /** Any kind or name Datastore accepts (those that begin and end with `__` are its own). */
  const unreserved = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/^__.*__$/s.test(s));

  it('decodes what it encodes: kinds, ids, names, ancestors and namespace', () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(unreserved, fc.oneof(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), unreserved)), { minLength: 1, maxLength: 4 }),
      fc.option(fc.stringMatching(/^[0-9A-Za-z._-]{1,10}$/), { nil: undefined }),
      (elements, namespace) => {
        const key = ds.key({ namespace, path: elements.flat() });
        const back = decodeKey(encodeKey(key, 'app'));
        assert.equal(keyPath(back), keyPath(key));
        assert.equal(back.namespace, namespace);
        assert.equal(back.kind, key.kind);
      },
    ));
  });

  it('decodes keys made by the datastore library', async () => {
    const key = ds.key({ namespace: 'ns', path: ['A', 1, 'B', 'x'] });
    const [encoded] = await ds.keyToLegacyUrlSafe(key);
    const back = decodeKey(encoded);
    assert.equal(keyPath(back), 'A:1/B:"x"');
    assert.equal(back.namespace, 'ns');
    assert.equal(back.parent?.id, 1);
  });

  it('decodes the standard base64 alphabet, padded or not, as the url-safe form it stands for', () => {
    fc.assert(fc.property(fc.array(fc.tuple(unreserved, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })), { minLength: 1, maxLength: 3 }), (elements) => {
      const key = ds.key({ namespace: 'ns', path: elements.flat() });
      const bytes = Buffer.from(encodeKey(key, 'app'), 'base64url');
      for (const form of [bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''), `${bytes.toString('base64url')}==`]) {
        const back = decodeKey(form);
        assert.equal(keyPath(back), keyPath(key), form);
        assert.equal(back.namespace, 'ns');
      }
    }));
    // Padding belongs at the end only; anything outside both alphabets is refused.
    const good = encodeKey(ds.key(['Counter', 42]), 'app');
    for (const input of [`${good.slice(0, 4)}=${good.slice(4)}`, `${good}.`, `=${good}`]) assert.throws(() => decodeKey(input), BadRequestError, input);
  });

  it('rejects malformed input with BadRequestError, never a crash', () => {
    const good = encodeKey(ds.key(['Counter', 42]), 'app');
    const bad = ['', 'not base64!', good.slice(0, good.length - 3), 'AAAA', Buffer.from([0x72, 0x05, 0x0b, 0x12, 0x01]).toString('base64url'),
      encodeKey(ds.key(['Counter', 'x']), 'app').replace(/./, 'z'), 'x'.repeat(9000)];
    for (const input of bad) assert.throws(() => decodeKey(input), BadRequestError, JSON.stringify(input.slice(0, 20)));
  });

  it('survives arbitrary bytes: every input is a key or a BadRequestError', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      try {
        decodeKey(Buffer.from(bytes).toString('base64url'));
      } catch (error) {
        assert.ok(error instanceof BadRequestError, String(error));
      }
    }));
  });

  it('rejects incomplete keys (no id or name)', () => {
    const incomplete = Buffer.from([0x6a, 0x01, 0x61, 0x72, 0x05, 0x0b, 0x12, 0x01, 0x41, 0x0c]).toString('base64url');
    assert.throws(() => decodeKey(incomplete), /neither an id nor a name/);
  });

  it('rejects keys Datastore itself would refuse (a namespace outside [0-9A-Za-z._-], a reserved __kind__ or __name__), before any store call', () => {
    const refused = [
      encodeKey(ds.key({ namespace: 'fuzz-&', path: ['Counter', 'x'] }), 'app'),
      encodeKey(ds.key({ namespace: 'tab\there', path: ['Counter', 1] }), 'app'),
      encodeKey(ds.key({ namespace: 'n'.repeat(101), path: ['Counter', 1] }), 'app'),
      encodeKey(ds.key(['__kind__', 'Counter']), 'app'),
      encodeKey(ds.key(['Counter', '__reserved__']), 'app'),
    ];
    for (const input of refused) assert.throws(() => decodeKey(input), BadRequestError, input);
    for (const namespace of ['a', 'Fuzz-1.ok_', 'n'.repeat(100)]) {
      assert.equal(decodeKey(encodeKey(ds.key({ namespace, path: ['Counter', '__x'] }), 'app')).namespace, namespace);
    }
  });
});

describe('key codec: numeric ids up to 2^63-1', () => {
  const big = ['9007199254740992', '9007199254740993', '9223372036854775807'];

  it('encodes ids beyond 2^53 given as strings or Datastore.int exactly as the datastore library does, and decodes every digit back', async () => {
    for (const id of big) {
      const key = ds.key({ namespace: 'ns', path: ['Shop', Datastore.int(id), 'Order', Datastore.int(id)] });
      const [theirs] = await ds.keyToLegacyUrlSafe(key, 's~');
      assert.equal(encodeKey(key, 's~my-project'), theirs, id);
      const back = decodeKey(theirs);
      assert.equal(back.id, id, 'the id keeps every digit (as a string)');
      assert.equal(back.parent?.id, id);
      assert.equal(keyPath(back), `Shop:${id}/Order:${id}`);
      assert.equal(back.namespace, 'ns');
    }
  });

  it('decodes ids up to 2^53-1 as numbers, as before', () => {
    const back = decodeKey(encodeKey(ds.key(['Counter', Number.MAX_SAFE_INTEGER]), 'app'));
    assert.equal(back.id, Number.MAX_SAFE_INTEGER);
  });

  it('rejects an id beyond 2^63-1 (a negative int64 on the wire) with BadRequestError', () => {
    const negative = encodeKey(ds.key(['Counter', 1]), 'app'); // then patch the id varint to 2^63
    const bytes = Buffer.from(negative, 'base64url');
    const at = bytes.indexOf(0x18); // TAG_ID
    const patched = Buffer.concat([bytes.subarray(0, at + 1), Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), bytes.subarray(at + 2)]);
    // the path's length prefix grew by 9 bytes
    const pathLength = patched.indexOf(0x72) + 1;
    patched[pathLength] = patched[pathLength]! + 9;
    assert.throws(() => decodeKey(patched.toString('base64url')), /beyond 2\^63-1/);
  });

  it('checkDeliverable refuses, with a sentence, every key that could not arrive as itself', () => {
    const refused: Array<[string, () => void]> = [
      ['an unsafe number id', () => checkDeliverable(ds.key(['Counter', 2 ** 53 + 2]), 'app')],
      ['an id beyond 2^63-1', () => checkDeliverable(ds.key(['Counter', Datastore.int('9223372036854775808')]), 'app')],
      ['an incomplete key', () => checkDeliverable(ds.key(['Counter']), 'app')],
      ['a huge name', () => checkDeliverable(ds.key(['Counter', 'x'.repeat(7000)]), 'app')],
    ];
    for (const [what, check] of refused) assert.throws(check, (e: unknown) => e instanceof TypeError && /cannot be delivered in a task/.test(e.message), what);
    for (const id of big) checkDeliverable(ds.key({ namespace: 'n', path: ['A', 'x', 'B', Datastore.int(id)] }), 'app');
    checkDeliverable(ds.key(['Counter', 42]), 'app');
  });
});

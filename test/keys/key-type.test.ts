// Each store's own key type (issue 40): a Locker on DatastoreStore or MemoryStore takes and hands
// out Datastore `Key`s exactly as before, one on FirestoreStore `DocumentReference`s. The type-level
// cases are checked by `tsc` (this file is in tsconfig.json): a wrong type below fails the
// typecheck, and each `@ts-expect-error` fails it when the call it marks is no longer an error.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Datastore, Key } from '@google-cloud/datastore';
import { DocumentReference, Firestore } from '@google-cloud/firestore';
import { Locker } from '../../src/locker';
import type { LockerOptions } from '../../src/config/options';
import { DATASTORE_KEYS, keyTypeOf } from '../../src/keys/key-type';
import type { EntityFactory, TaskContext } from '../../src/step/handler-types';
import type { KickoffItem, ScheduleManyResult } from '../../src/chain/schedule-many-types';
import type { FanIn, FanOutChild } from '../../src/fanout/types';
import type { FanOutActionResult } from '../../src/fanout/operator';
import type { Inspector } from '../../src/ops/inspect/inspector';
import type { RecurringTick } from '../../src/recurring/recurring-types';
import { DatastoreStore } from '../../src/store/datastore/store';
import { FirestoreStore } from '../../src/store/firestore/store';
import { MemoryStore } from '../../src/store/memory/store';

/** True when `A` and `B` are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
/** Compiles only when `T` is `true`. */
function expectType<T extends true>(): T | undefined {
  return undefined;
}

const datastore = new Locker({ store: new DatastoreStore(new Datastore({ projectId: 'p' })), authenticate: false });
const memory = new Locker({ store: new MemoryStore(), authenticate: false });
const firestore = new Firestore({ projectId: 'p' });
const native = new Locker({ store: new FirestoreStore(firestore), authenticate: false });

describe('the key type of a Locker follows its store', () => {
  it('takes Key on DatastoreStore and MemoryStore, as before: the same signatures, scheduleMany and fan-out included', () => {
    expectType<Equal<typeof datastore, Locker>>();
    expectType<Equal<typeof memory, Locker<Key>>>();
    expectType<Equal<Parameters<typeof datastore.schedule>[0], Key>>();
    expectType<Equal<Parameters<typeof datastore.retry>[0], Key>>();
    expectType<Equal<Parameters<typeof datastore.cancel>[0], Key>>();
    expectType<Equal<Parameters<typeof datastore.resend>[0], Key>>();
    expectType<Equal<Parameters<typeof datastore.handle<object>>[0], (ctx: TaskContext<object>) => Promise<void> | void>>();
    expectType<Equal<Parameters<typeof datastore.handle<object>>[1], EntityFactory<object>>>();
    expectType<Equal<TaskContext<object>['key'], Key>>();
    expectType<Equal<Parameters<typeof datastore.scheduleMany>[0], readonly KickoffItem[]>>();
    expectType<Equal<ReturnType<typeof datastore.scheduleMany>, Promise<ScheduleManyResult>>>();
    expectType<Equal<ScheduleManyResult['results'][number]['key'], Key>>();
    expectType<Equal<Parameters<typeof datastore.cancelFanOut>[0], Key>>();
    expectType<Equal<Parameters<typeof datastore.retryFanOutChildren>[0], Key>>();
    expectType<Equal<ReturnType<typeof datastore.retryFanOutChildren>, Promise<FanOutActionResult>>>();
    expectType<Equal<Parameters<TaskContext<object>['fanOut']>[0], Iterable<FanOutChild> | AsyncIterable<FanOutChild>>>();
    expectType<Equal<ReturnType<TaskContext<object>['fanIn']>, Promise<FanIn | undefined>>>();
    expectType<Equal<ReturnType<typeof datastore.inspect>, Inspector>>();
    expectType<Equal<Parameters<typeof datastore.recurring>[1]['key'], Key | ((tick: RecurringTick) => Key) | undefined>>();
    expectType<Equal<Parameters<ReturnType<typeof datastore.inspect>['step']>[0], Key>>();
    expectType<Equal<NonNullable<Awaited<ReturnType<ReturnType<typeof datastore.inspect>['step']>>>['key'], Key>>();
    // An options object typed as before still makes a Locker of Keys.
    const options: LockerOptions = { store: new MemoryStore() };
    expectType<Equal<typeof options.store.keyType, undefined | import('../../src/keys/key-type').KeyType<Key>>>();
    // Typechecked, never called (a call would go to Datastore).
    const calls = (): unknown => [
      // @ts-expect-error: a Datastore Locker takes no DocumentReference
      datastore.cancel(firestore.doc('Order/o-1')),
      // @ts-expect-error: nor does a MemoryStore's
      memory.schedule(firestore.doc('Order/o-1'), {}, '/charge'),
      datastore.schedule(new Key({ path: ['Order', 'o-1'] }), {}, '/charge'),
    ];
    void calls;
    datastore.handle((ctx) => {
      expectType<Equal<typeof ctx.key, Key>>();
    }, (props, key) => {
      expectType<Equal<typeof key, Key>>();
      return props;
    });
    const key = new Key({ path: ['Order', 'o-1'] });
    const keys = keyTypeOf<Key>({});
    assert.equal(keys, DATASTORE_KEYS, 'a store with no key type has Keys as they are');
    assert.equal(keys.toKey(key), key);
    assert.equal(keys.fromKey(key), key);
  });

  it('takes DocumentReference on FirestoreStore: schedule, scheduleMany, retry, cancel, resend, the fan-out actions, ctx.key, ctx.fanOut/fanIn and the factory key', () => {
    expectType<Equal<typeof native, Locker<DocumentReference>>>();
    expectType<Equal<Parameters<typeof native.schedule>[0], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.retry>[0], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.cancel>[0], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.resend>[0], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.scheduleMany>[0], readonly KickoffItem<DocumentReference>[]>>();
    expectType<Equal<Awaited<ReturnType<typeof native.scheduleMany>>['results'][number]['key'], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.cancelFanOut>[0], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.retryFanOutChildren>[0], DocumentReference>>();
    expectType<Equal<NonNullable<Awaited<ReturnType<typeof native.retryFanOutChildren>>['skipped']>[number]['key'], DocumentReference>>();
    expectType<Equal<Parameters<typeof native.recurring>[1]['key'], DocumentReference | ((tick: RecurringTick) => DocumentReference) | undefined>>();
    const inspector = native.inspect();
    expectType<Equal<typeof inspector, Inspector<DocumentReference>>>();
    expectType<Equal<Parameters<typeof inspector.step>[0], DocumentReference>>();
    type Detail = NonNullable<Awaited<ReturnType<typeof inspector.step>>>;
    expectType<Equal<Detail['key'], DocumentReference>>();
    expectType<Equal<NonNullable<Detail['fanOut']>['failures'][number]['key'], DocumentReference>>();
    expectType<Equal<NonNullable<Detail['parent']>['key'], DocumentReference>>();
    expectType<Equal<Detail['fanOuts'][number]['parent']['key'], DocumentReference>>();
    expectType<Equal<Awaited<ReturnType<typeof inspector.list>>['steps'][number]['key'], DocumentReference>>();
    expectType<Equal<Awaited<ReturnType<typeof inspector.search>>[number]['step']['key'], DocumentReference>>();
    expectType<Equal<NonNullable<Awaited<ReturnType<typeof inspector.kickoffs>>['rows'][number]['oldestPending']>['key'], DocumentReference>>();
    native.handle(async (ctx) => {
      expectType<Equal<typeof ctx.key, DocumentReference>>();
      expectType<Equal<Parameters<typeof ctx.fanOut>[0], Iterable<FanOutChild<DocumentReference>> | AsyncIterable<FanOutChild<DocumentReference>>>>();
      const page = await (await ctx.fanIn())?.children();
      expectType<Equal<NonNullable<typeof page>['children'][number]['key'], DocumentReference>>();
    }, (props, key) => {
      expectType<Equal<typeof key, DocumentReference>>();
      return props;
    });
    const calls = (): unknown => [
      // @ts-expect-error: a FirestoreStore's Locker takes no Datastore Key
      native.schedule(new Key({ path: ['Order', 'o-1'] }), {}, '/charge'),
      // @ts-expect-error: nor a path
      native.retry('Order/o-1'),
      // @ts-expect-error: nor are a scheduleMany() item's keys
      native.scheduleMany([{ key: new Key({ path: ['Order', 'o-1'] }), entity: {}, path: '/charge' }]),
      native.schedule(firestore.doc('Order/o-1'), {}, '/charge'),
    ];
    void calls;
    // @ts-expect-error: nor is a FirestoreStore an option of a Locker of Keys
    const wrong: LockerOptions = { store: new FirestoreStore(firestore) };
    void wrong;
  });
});

describe("FirestoreStore's key type maps a DocumentReference of its client to a Key and back", () => {
  const keys = new FirestoreStore(firestore).keyType;
  const cases: Array<[string, Key]> = [
    ['Order/o-1', new Key({ path: ['Order', 'o-1'] })],
    ['Order/o-1/Line/l-1', new Key({ path: ['Order', 'o-1', 'Line', 'l-1'] })],
    ['Order/#42', new Key({ path: ['Order', Datastore.int('42')] })],
    ['Order/##x', new Key({ path: ['Order', '#x'] })],
    ['LockerNamespaces/tenant-a/Order/o-1', new Key({ namespace: 'tenant-a', path: ['Order', 'o-1'] })],
  ];
  for (const [path, key] of cases) {
    it(`${path} is ${key.namespace ? `namespace ${key.namespace}, ` : ''}${key.serialized.path.join(':')}`, () => {
      const mapped = keys.toKey(firestore.doc(path));
      assert.deepEqual({ namespace: mapped.namespace, path: mapped.path.map(String) }, { namespace: key.namespace, path: key.path.map(String) });
      assert.equal(mapped.id, key.id);
      assert.equal(mapped.name, key.name);
      const back = keys.fromKey(key);
      assert.ok(back instanceof DocumentReference);
      assert.equal(back.path, path);
      assert.equal(back.firestore, firestore, "the store's own client");
    });
  }

  it('writes a key as its document\'s path (show) and reads a path back (parse), the path saying its namespace; nothing for a text that names no document', () => {
    for (const [path, key] of cases) {
      assert.equal(keys.show(key), path);
      const parsed = keys.parse(path, ['', 'other']);
      assert.equal(parsed.length, 1, `one key for ${path}, whatever namespaces are searched`);
      assert.equal(keys.show(parsed[0]!), path);
      assert.equal(parsed[0]!.namespace, key.namespace);
    }
    assert.equal(keys.show(keys.parse('/Order/o-1', [''])[0]!), 'Order/o-1', 'a leading / is allowed');
    for (const text of ['', 'Order', 'Order:"o-1"', 'Order/#x', 'LockerNamespaces/ns', 'a//b']) assert.deepEqual(keys.parse(text, ['']), [], text);
    assert.equal(DATASTORE_KEYS.show(new Key({ path: ['Order', 'o-1'] })), 'Order:"o-1"');
    assert.deepEqual(DATASTORE_KEYS.parse('Order:"o-1"', ['', 'ns']).map((k) => [k.namespace, k.name]), [[undefined, 'o-1'], ['ns', 'o-1']]);
    assert.deepEqual(DATASTORE_KEYS.parse('Order/o-1', ['']), []);
  });

  it('refuses, with a TypeError naming it, anything else: another client, another database, a path the store never makes', () => {
    const ofAnotherDatabase = new Firestore({ projectId: 'p', databaseId: 'orders' }).doc('Order/o-1');
    assert.throws(() => keys.toKey(ofAnotherDatabase), {
      name: 'TypeError',
      message: "the DocumentReference Order/o-1 is of another Firestore client than the store's (database orders): make it with the client the FirestoreStore was built on",
    });
    assert.throws(() => keys.toKey(new Firestore({ projectId: 'p' }).doc('Order/o-1')), { name: 'TypeError', message: /of another Firestore client than the store's \(database \(default\)\)/u });
    assert.throws(() => keys.toKey(firestore.doc('Order/#x')), { name: 'TypeError', message: /^the document Order\/#x has no key in a FirestoreStore/u });
    assert.throws(() => keys.toKey(firestore.doc('LockerNamespaces/tenant-a')), { name: 'TypeError', message: /^the document LockerNamespaces\/tenant-a has no key/u });
    for (const [bad, got] of [[undefined, 'undefined'], [null, 'null'], ['Order/o-1', 'the string "Order/o-1"'], [{ path: 'Order/o-1' }, 'an object'], [firestore.collection('Order'), 'a CollectionReference']] as const) {
      assert.throws(() => keys.toKey(bad as unknown as DocumentReference), { name: 'TypeError', message: `a FirestoreStore's Locker takes a DocumentReference (firestore.doc('Order/o-1')); got ${got}` });
    }
  });
});

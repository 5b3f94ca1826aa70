/**
 * A handler's context as the user's store keys it: the same context, with `ctx.key` in the store's
 * key type (`keys/key-type.ts`). Every other member is the context's own, read through (the
 * lazy ones, `task`, `signal` and `idempotencyKey`, stay lazy).
 */
import type { Key } from '@google-cloud/datastore';
import { isDatastoreKeys, type KeyType } from '../keys/key-type';
import type { EntityFactory, TaskContext, TaskHandler } from './handler-types';
import type { FanOutChild } from '../fanout/types';

/**
 * `handler` on the store's keys `K`, as the attempt runs it on `Key`s: itself on a store whose keys
 * are `Key`s (then `K` is `Key`), and anything but a function as it is (`handle()` refuses it).
 */
export function keyedHandler<E, P, K>(handler: TaskHandler<E, P, K>, keys: KeyType<K>): TaskHandler<E, P> {
  if (typeof handler !== 'function' || isDatastoreKeys(keys)) return handler as TaskHandler<E, P, unknown>;
  return (ctx) => handler(keyedContext(ctx, keys));
}

/** `factory` on the store's keys `K`, as `keyedHandler` makes a handler. */
export function keyedFactory<E, K>(factory: EntityFactory<E, K>, keys: KeyType<K>): EntityFactory<E> {
  if (typeof factory !== 'function' || isDatastoreKeys(keys)) return factory as EntityFactory<E, unknown>;
  return (properties, key) => factory(properties, keys.fromKey(key));
}

function keyedContext<E, P, K>(ctx: TaskContext<E, P, Key>, keys: KeyType<K>): TaskContext<E, P, K> {
  let key: K | undefined;
  return {
    get key() {
      return (key ??= keys.fromKey(ctx.key));
    },
    entity: ctx.entity,
    seq: ctx.seq,
    payload: ctx.payload,
    attempt: ctx.attempt,
    get task() {
      return ctx.task;
    },
    get signal() {
      return ctx.signal;
    },
    request: ctx.request,
    get idempotencyKey() {
      return ctx.idempotencyKey;
    },
    handBack: () => ctx.handBack(),
    schedule: (path, payload, options) => ctx.schedule(path, payload, options),
    complete: () => ctx.complete(),
    fanOut: (children, options) => ctx.fanOut(childrenOnKeys(children, keys), options),
    fanIn: async () => {
      const fanIn = await ctx.fanIn();
      return fanIn && {
        id: fanIn.id,
        outcome: fanIn.outcome,
        counts: fanIn.counts,
        children: async (options) => {
          const page = await fanIn.children(options);
          return { ...page, children: page.children.map((child) => ({ ...child, key: keys.fromKey(child.key) })) };
        },
      };
    },
    setResult: (value) => ctx.setResult(value),
  };
}

/**
 * A fan-out's children on `Key`s, each turned as the source yields it (an async source stays
 * async, a sync one sync: `fanOut()` reads either a child at a time). A child whose key the key
 * type refuses stops the source with a `TypeError` naming the child, as `fanOut()` names one it
 * refuses itself; anything but an iterable is handed on as it is, for `fanOut()` to refuse.
 */
function childrenOnKeys<K>(children: Iterable<FanOutChild<K>> | AsyncIterable<FanOutChild<K>>, keys: KeyType<K>): Iterable<FanOutChild> | AsyncIterable<FanOutChild> {
  if (children === null || typeof children !== 'object') return children;
  if (Symbol.asyncIterator in children) {
    return (async function* () {
      let index = 0;
      for await (const child of children) yield childOnKey(child, index++, keys);
    })();
  }
  if (!(Symbol.iterator in children)) return children;
  return (function* () {
    let index = 0;
    for (const child of children) yield childOnKey(child, index++, keys);
  })();
}

function childOnKey<K>(child: FanOutChild<K>, index: number, keys: KeyType<K>): FanOutChild {
  if (typeof child !== 'object' || child === null) throw new TypeError(`fanOut(): child ${index} must be { key, path, payload?, entity? }`);
  try {
    return { ...child, key: keys.toKey(child.key) };
  } catch (error) {
    throw new TypeError(`fanOut(): child ${index}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * A handler's context as the user's store keys it: the same context, with `ctx.key` in the store's
 * key type (`keys/key-type.ts`). Every other member is the context's own, read through (the
 * lazy ones, `task`, `signal` and `idempotencyKey`, stay lazy).
 */
import type { Key } from '@google-cloud/datastore';
import { isDatastoreKeys, type KeyType } from '../keys/key-type';
import type { EntityFactory, TaskContext, TaskHandler } from './handler-types';

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
    fanOut: (children, options) => ctx.fanOut(children, options),
    fanIn: () => ctx.fanIn(),
    setResult: (value) => ctx.setResult(value),
  };
}

/**
 * A schedule as declared in code, checked once: `locker.recurring(name, options)` turns the user's
 * options into a frozen `Declaration` (every default filled, the expression compiled in its zone)
 * or throws a `ConfigError` / `RangeError` / `TypeError` naming what is wrong. Its `spec` is the
 * part kept on the schedule's record, and its hash tells a changed declaration from the same one.
 */
import { createHash } from 'node:crypto';
import { Key } from '@google-cloud/datastore';
import { rejectUnknownOptions } from '../config/option-names';
import { dropUndefined } from '../config/drop-undefined';
import { ConfigError } from '../errors/errors';
import { keyPath } from '../keys/key-path';
import type { Json } from '../types';
import { cronTimes, type CronTimes } from './cron-times';
import { RECURRING_DEFAULTS, RECURRING_OPTION_NAMES, type MisfirePolicy, type OverlapPolicy, type RecurringOptions, type RecurringTick } from './recurring-types';

/** The kind of the entity a schedule's runs start on when no key is given: one per schedule. */
export const RUN_ENTITY_KIND = 'LockerRecurringRun';
/** Longest schedule name (it names the record and the default run entity). */
export const MAX_NAME_LENGTH = 200;
/** Longest grace and jitter: a day. */
const MAX_WINDOW_MS = 86_400_000;

/** The part of a declaration kept on the schedule's record (and shown to the operator). */
export interface ScheduleSpec {
  cron: string;
  timeZone: string;
  path: string;
  overlap: OverlapPolicy;
  misfire: MisfirePolicy;
  graceMs: number;
  jitterMs: number;
  /** `fixed` (one entity for every run) or `per-tick`. */
  keyMode: 'fixed' | 'per-tick';
  /** The fixed entity, as the status page writes keys (with its namespace). */
  fixedKey?: string;
  fixedNamespace?: string;
}

/** A checked declaration. */
export interface Declaration {
  readonly name: string;
  readonly times: CronTimes;
  readonly spec: ScheduleSpec;
  /** A hash of `spec`: equal for the same declaration. */
  readonly specHash: string;
  /** The run entity of a tick. */
  keyOf(tick: RecurringTick): Key;
  /** The entity written with a run's first step. */
  entityOf(tick: RecurringTick): unknown;
  /** A run's first payload. */
  payloadOf(tick: RecurringTick): Json;
}

/** Checks `options` for schedule `name` (its default run entity in `namespace`, the Locker's `scheduleNamespace`). */
export function declare(name: string, options: RecurringOptions, namespace = ''): Declaration {
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH || name.startsWith('__') || /[\u0000-\u001f]/.test(name)) {
    throw new TypeError(`a schedule's name must be 1 to ${MAX_NAME_LENGTH} characters, with no control characters, not starting with "__"; got ${JSON.stringify(name)}`);
  }
  const owner = `locker.recurring(${JSON.stringify(name)})`;
  if (typeof options !== 'object' || options === null) throw new TypeError(`${owner} takes an options object ({ cron, path, ... })`);
  rejectUnknownOptions(owner, options, RECURRING_OPTION_NAMES);
  const o = { ...RECURRING_DEFAULTS, ...dropUndefined(options) };
  const times = cronTimes(o.cron, o.timeZone);
  if (typeof o.path !== 'string' || !/^\/[\x21-\x7e]*$/.test(o.path)) throw new TypeError(`${owner}: the path must start with "/" and contain no spaces; got ${JSON.stringify(o.path)}`);
  if (!['skip', 'allow', 'queue'].includes(o.overlap)) throw new ConfigError(`${owner}: overlap must be "skip", "allow" or "queue"; got ${JSON.stringify(o.overlap)}`);
  if (!['coalesce', 'each', 'skip'].includes(o.misfire)) throw new ConfigError(`${owner}: misfire must be "coalesce", "each" or "skip"; got ${JSON.stringify(o.misfire)}`);
  for (const [option, value] of [['graceMs', o.graceMs], ['jitterMs', o.jitterMs]] as const) {
    if (!Number.isSafeInteger(value) || value < 0 || value > MAX_WINDOW_MS) throw new RangeError(`${owner}: ${option} must be a whole number of ms from 0 to ${MAX_WINDOW_MS}; got ${String(value)}`);
  }
  const given = o.key;
  if (given !== undefined && typeof given !== 'function' && !(given instanceof Key)) throw new TypeError(`${owner}: key must be a Key or a function of the tick that returns one`);
  const fixed = given === undefined ? new Key({ ...(namespace !== '' && { namespace }), path: [RUN_ENTITY_KIND, name] }) : given instanceof Key ? given : undefined;
  if (fixed && o.overlap === 'allow') throw new ConfigError(`${owner}: overlap "allow" runs beside a live run, which needs a key per tick: pass key as a function of the tick`);
  if (o.entity !== undefined && typeof o.entity !== 'function') throw new TypeError(`${owner}: entity must be a function of the tick`);
  const spec: ScheduleSpec = {
    cron: o.cron, timeZone: o.timeZone, path: o.path, overlap: o.overlap, misfire: o.misfire, graceMs: o.graceMs, jitterMs: o.jitterMs,
    keyMode: fixed ? 'fixed' : 'per-tick',
    ...(fixed && { fixedKey: keyPath(fixed), fixedNamespace: fixed.namespace ?? '' }),
  };
  const keyFn = typeof given === 'function' ? given : undefined;
  const payload = o.payload;
  const entityFn = o.entity;
  return Object.freeze({
    name, times, spec, specHash: specHash(spec),
    keyOf(tick: RecurringTick): Key {
      if (fixed) return fixed;
      const key: unknown = keyFn!(tick);
      if (!(key instanceof Key)) throw new TypeError(`${owner}: key(tick) returned ${describe(key)}, not a Key`);
      return key;
    },
    entityOf(tick: RecurringTick): unknown {
      return entityFn ? entityFn(tick) : { schedule: name, scheduledAt: tick.at };
    },
    payloadOf(tick: RecurringTick): Json {
      if (typeof payload === 'function') return payload(tick);
      return payload ?? { schedule: name, scheduledAt: tick.at.toISOString() };
    },
  });
}

/** The hash of a spec (its fields in a fixed order). */
export function specHash(spec: ScheduleSpec): string {
  const ordered = [spec.cron, spec.timeZone, spec.path, spec.overlap, spec.misfire, spec.graceMs, spec.jitterMs, spec.keyMode, spec.fixedKey ?? '', spec.fixedNamespace ?? ''];
  return createHash('sha256').update(JSON.stringify(ordered)).digest('base64url').slice(0, 16);
}

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value === 'object' ? 'an object' : typeof value;
}

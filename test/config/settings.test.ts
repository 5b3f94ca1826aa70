/**
 * Settings (src/config/settings.ts): each part and each operation of the facade is built with an
 * object holding only the settings it names. Checked on the object graph a real Locker builds: the
 * whole parsed `Config` is reachable from none of its parts or ports, and the store, the queue and
 * the alerter only from the parts that own them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { LocalQueue } from '../../src/queue/local';
import { parseOptions } from '../../src/config/options';
import { settingsOf } from '../../src/config/settings';
import type { Alerter } from '../../src/types';
import { MemoryLogger } from '../support/task-app';

/** Where each object was first met, walking own properties (and array, Map and Set members) from the roots. */
function reachable(roots: Record<string, unknown>): Map<object, string> {
  const seen = new Map<object, string>();
  const visit = (value: unknown, path: string, depth: number): void => {
    if (value === null || typeof value !== 'object' || seen.has(value) || depth > 12) return;
    seen.set(value, path);
    if (value instanceof Map) for (const [k, v] of value) visit(v, `${path}.get(${String(k)})`, depth + 1);
    else if (value instanceof Set) for (const v of value) visit(v, `${path}.has(…)`, depth + 1);
    else for (const name of Object.getOwnPropertyNames(value)) {
      const field = Object.getOwnPropertyDescriptor(value, name)!;
      if ('value' in field) visit(field.value, `${path}.${name}`, depth + 1);
    }
  };
  for (const [name, root] of Object.entries(roots)) visit(root, name, 0);
  return seen;
}

function lockerWithEverything(): { locker: Locker; store: MemoryStore; queue: LocalQueue; alerter: Alerter } {
  const store = new MemoryStore({ projectId: 'settings-test' });
  const queue = new LocalQueue({ baseUrl: 'http://127.0.0.1:9', logger: new MemoryLogger() });
  const alerter: Alerter = { async send() {} };
  const locker = new Locker({ store, queue, alerter, authenticate: false, logger: new MemoryLogger() });
  return { locker, store, queue, alerter };
}

/** The Locker's parts and the ports it hands its operations (private fields of our own class, read as a test may). */
function partsAndPorts(locker: Locker): Record<string, unknown> {
  const inside = locker as unknown as { parts: unknown; ports: unknown };
  assert.ok(inside.parts && inside.ports, 'the Locker has its parts and ports');
  return { parts: inside.parts, ports: inside.ports };
}

describe('settings: each part holds only what it reads', () => {
  it('settingsOf() copies the named fields only, frozen, and a getter stays live', () => {
    const store = new MemoryStore({});
    const config = parseOptions({ store, authenticate: false, logger: new MemoryLogger() });
    const settings = settingsOf(config, ['clock', 'keyAppId']);
    assert.deepEqual(Object.keys(settings).sort(), ['clock', 'keyAppId']);
    assert.ok(Object.isFrozen(settings));
    assert.equal(settings.keyAppId, 'datastore-locker');
    // The store learns its project id after the Locker was built (lookUpProjectId): keys follow it.
    (store as { projectId?: string }).projectId = 'learned-later';
    assert.equal(settings.keyAppId, 'learned-later');
    assert.throws(() => settingsOf(config, ['nope' as 'clock']), TypeError);
  });

  it('no part and no port of a Locker reaches the whole Config', () => {
    const { locker } = lockerWithEverything();
    const graph = reachable(partsAndPorts(locker));
    assert.equal(graph.get(locker.config), undefined, `the whole Config is reachable at ${graph.get(locker.config)}`);
    // The walk sees what it looks for: settings objects of parts and ports are in the graph.
    const settings = [...graph].filter(([, path]) => /\.(config|settings)$/.test(path));
    assert.ok(settings.length >= 10, `settings objects found: ${settings.length}`);
    for (const [object, path] of settings) {
      assert.ok(Object.keys(object).length < Object.keys(locker.config).length, `${path} holds every setting`);
    }
  });

  it('the store, the queue and the alerter are reached only through the parts that own them', () => {
    const { locker, store, queue, alerter } = lockerWithEverything();
    const graph = reachable(partsAndPorts(locker));
    const holders = (wanted: object): string[] => {
      const paths: string[] = [];
      for (const [object, path] of graph) {
        for (const name of Object.getOwnPropertyNames(object)) {
          const field = Object.getOwnPropertyDescriptor(object, name)!;
          if ('value' in field && field.value === wanted) paths.push(`${path}.${name}`);
        }
      }
      return paths.sort();
    };
    // Each is held where its part keeps it, and the walk finds it there (so an extra holder would show).
    assert.deepEqual(holders(queue), ['parts.dispatcher.settings.queue']);
    assert.deepEqual(holders(alerter), ['parts.alerts.config.alerter']);
    const storeHolders = holders(store);
    assert.ok(storeHolders.includes('parts.locks.settings.store'), storeHolders.join(', '));
    for (const path of storeHolders) assert.match(path, /^parts\.(locks|reads|ledger)\./, `the store is held outside its parts, at ${path}`);
  });
});

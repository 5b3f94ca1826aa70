// The Locker's true-or-false options are checked like every other option: a value that is not a
// boolean is a ConfigError naming the option, never a truthy string that silently turns a switch on.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/errors/errors';
import { Locker } from '../../src/locker';
import type { LockerOptions } from '../../src/config/options';
import { MemoryStore } from '../../src/store/memory/store';

describe('new Locker(): boolean options', () => {
  for (const flag of ['alertOnOverwrite', 'alertOnFailure', 'telemetry'] as const) {
    it(`${flag} must be true or false`, () => {
      for (const bad of ['false', 0, 1, null, {}]) {
        assert.throws(() => new Locker({ store: new MemoryStore(), authenticate: false, [flag]: bad } as unknown as LockerOptions),
          (e: unknown) => e instanceof ConfigError && e.message.startsWith(`${flag} must be true or false; got ${JSON.stringify(bad)}.`), `${flag}: ${JSON.stringify(bad)}`);
      }
      for (const good of [true, false, undefined]) new Locker({ store: new MemoryStore(), authenticate: false, [flag]: good });
    });
  }
});

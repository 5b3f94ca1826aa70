/**
 * The three clocks (`requestTimeout`, the queue's dispatch deadline, `leaseTimeout`): a ConfigError
 * for a combination that cannot work, one warning naming the three numbers for one that wastes,
 * and silence for the defaults.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CloudTasksClient } from '@google-cloud/tasks';
import { ConfigError } from '../../src/errors/errors';
import { Locker } from '../../src/locker';
import { CloudTasksQueue, type CloudTasksQueueOptions } from '../../src/queue/cloud-tasks';
import { MemoryStore } from '../../src/store/memory/store';
import { MemoryLogger } from '../support/task-app';
import type { LockerOptions } from '../../src/config/options';

process.env.METADATA_SERVER_DETECTION = 'none';
const client = new CloudTasksClient({ projectId: 'test-project' });
after(() => client.close());

function queue(options: Partial<CloudTasksQueueOptions> = {}): CloudTasksQueue {
  return new CloudTasksQueue({ client, project: 'p', location: 'europe-west1', queue: 'q', target: { type: 'http', url: 'https://x.example/task' }, ...options });
}

/** Builds a Locker on a logger of its own; returns what it warned. */
function build(options: Partial<LockerOptions>): { locker: Locker; warnings: string[] } {
  const logger = new MemoryLogger();
  const locker = new Locker({ store: new MemoryStore(), authenticate: false, logger, ...options });
  return { locker, warnings: logger.lines.filter((l) => l.level !== 'info').map((l) => l.message) };
}

describe('time limits that agree', () => {
  it('the defaults, with and without a Cloud Tasks queue, are valid and say nothing', () => {
    for (const q of [undefined, queue()]) {
      const { locker, warnings } = build({ queue: q });
      assert.deepEqual(warnings, []);
      assert.equal(locker.config.requestTimeout, 300_000);
      assert.equal(locker.config.stepLimit, 270_000, 'stopped 30 s before Cloud Run cuts the request');
      assert.equal(locker.config.leaseTimeout, 630_000);
    }
    assert.equal(queue().dispatchDeadlineMs, 600_000, "Cloud Tasks' default deadline, when none is given");
  });

  it('stops a step a tenth of requestTimeout before it, at least 1 s and at most 30 s; leaseTimeout defaults to at least requestTimeout', () => {
    assert.deepEqual(pick(build({ requestTimeout: 10_000 }).locker), [1_000 * 9, 500, 630_000]);
    assert.deepEqual(pick(build({ requestTimeout: 120_000 }).locker), [108_000, 6_000, 630_000]);
    const hour = build({ requestTimeout: 3_600_000, queue: queue({ dispatchDeadlineMs: 1_800_000 }) });
    assert.deepEqual(pick(hour.locker), [3_570_000, 15_000, 3_600_000]);
  });

  it('throws ConfigError for a requestTimeout that leaves no room (most likely seconds), or is not a whole number of ms', () => {
    assert.throws(() => build({ requestTimeout: 300 }), (e: unknown) => e instanceof ConfigError && /requestTimeout \(300 ms\).*milliseconds/.test(e.message));
    assert.throws(() => build({ requestTimeout: 1.5e4 + 0.5 }), ConfigError);
    assert.throws(() => build({ requestTimeout: -1 }), ConfigError);
  });

  it('warns, naming the three numbers, when the dispatch deadline ends before the step may', () => {
    const { warnings } = build({ requestTimeout: 3_600_000, queue: queue() });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /requestTimeout 3600000 ms, dispatch deadline 600000 ms, leaseTimeout 3600000 ms/);
    assert.match(warnings[0]!, /set the dispatch deadline to requestTimeout or more/);
  });

  it('warns when the dispatch deadline ends after the step is stopped but before its answer may come (one rule: at least requestTimeout)', () => {
    // requestTimeout 600 s: the step is stopped at 570 s and answered by 600 s; a deadline of 580 s may lose that answer.
    const { warnings } = build({ requestTimeout: 600_000, queue: queue({ dispatchDeadlineMs: 580_000 }) });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /dispatch deadline 580000 ms/);
    assert.deepEqual(build({ requestTimeout: 600_000, queue: queue({ dispatchDeadlineMs: 600_000 }) }).warnings, [], 'equal is enough');
    assert.deepEqual(build({ requestTimeout: 600_000, queue: queue({ dispatchDeadlineMs: 1_800_000, target: { type: 'http', url: 'https://x.example' } }), leaseTimeout: 630_000 }).warnings, [], 'a deadline past leaseTimeout is fine');
  });

  it('warns when a given leaseTimeout ends renewal before the step may end', () => {
    const { warnings } = build({ leaseTimeout: 120_000, leaseDuration: 60_000 });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /requestTimeout 300000 ms, dispatch deadline unknown, leaseTimeout 120000 ms/);
    assert.match(warnings[0]!, /set leaseTimeout to requestTimeout or more/);
  });

  it('says nothing when the deadline and leaseTimeout are both at or past the step limit', () => {
    assert.deepEqual(build({ requestTimeout: 900_000, leaseTimeout: 900_000, queue: queue({ dispatchDeadlineMs: 900_000 }) }).warnings, []);
  });
});

function pick(locker: Locker): number[] {
  return [locker.config.stepLimit, locker.config.stepGrace, locker.config.leaseTimeout];
}

// The claims in `lock_alerts`, read and rewritten by pure functions: which overwrite alerts are
// still owed, how a mark is written, what a write ending a step keeps, and what a new claim keeps.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { carriedAlerts, claimAlert, markAlertsSent, unsentOverwrite, unsentOverwrites } from '../../src/rules/alert-markers';
import type { Lock } from '../../src/rules/lock-fields';
import { parseOptions } from '../../src/config/options';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState } from '../../src/types';

const lock = (alerts: string[], seq = 3): Lock => ({
  ts: new Date(0), req: '', seq, tries: 1, state: StepState.scheduled, chain: 'c', run: undefined, task: 't', err: undefined, alerts, legacy: false,
});

describe('alert claims on the lock', () => {
  it('reads an overwrite claim, a Go request id with colons included; not a sent one, a failure or a malformed one', () => {
    assert.deepEqual(unsentOverwrite('overwrite:2:P:Q:Y'), { seq: 2, previous: 'P:Q', next: 'Y', marker: 'overwrite:2:P:Q:Y' });
    assert.equal(unsentOverwrite('overwrite:2:P:Y:sent'), undefined);
    assert.equal(unsentOverwrite('failure:2:A'), undefined);
    assert.equal(unsentOverwrite('overwrite:x:P:Y'), undefined);
    assert.equal(unsentOverwrite('overwrite:2:Y'), undefined);
  });

  it('lists the unsent overwrite claims of every step the lock carries', () => {
    const l = lock(['overwrite:2:A:B', 'overwrite:3:B:C:sent', 'failure:3:C', 'overwrite:3:C:D']);
    assert.deepEqual(unsentOverwrites(l).map((c) => c.marker), ['overwrite:2:A:B', 'overwrite:3:C:D']);
  });

  it('marks a claim of the lock\'s step with :sent, drops a sent claim of an earlier step, leaves the rest', () => {
    const alerts = ['overwrite:2:A:B', 'overwrite:3:C:D', 'failure:3:D', 'overwrite:3:E:F'];
    assert.deepEqual(markAlertsSent(alerts, 3, ['overwrite:2:A:B', 'overwrite:3:C:D', 'failure:3:D']), ['overwrite:3:C:D:sent', 'failure:3:D:sent', 'overwrite:3:E:F']);
    assert.deepEqual(markAlertsSent(alerts, 3, []), alerts);
  });

  it('a write ending the step keeps the unsent claims (overwrite and failure) the writer did not send, and nothing else', () => {
    const l = lock(['overwrite:2:A:B', 'overwrite:3:C:D', 'overwrite:3:E:F:sent', 'failure:3:F', 'failure:2:G:sent']);
    assert.deepEqual(carriedAlerts(l, ['overwrite:3:C:D']), ['overwrite:2:A:B', 'failure:3:F']);
    assert.deepEqual(carriedAlerts(l, [], { overwrite: true, failure: false }), ['overwrite:2:A:B', 'overwrite:3:C:D'], 'a reason that is off is not carried');
    assert.deepEqual(carriedAlerts(lock([]), []), []);
  });

  it('a new claim drops the earlier steps\' markers except the claims still unsent (overwrite and failure)', () => {
    const config = parseOptions({ store: new MemoryStore(), alerter: () => undefined, authenticate: false });
    const l = lock(['overwrite:1:A:B:sent', 'failure:1:B', 'failure:0:Z:sent', 'overwrite:2:B:C', 'overwrite:3:C:D:sent']);
    assert.deepEqual(claimAlert(config, l, { previous: 'D', next: 'E' }), ['failure:1:B', 'overwrite:2:B:C', 'overwrite:3:C:D:sent', 'overwrite:3:D:E']);
    assert.deepEqual(claimAlert(config, l, { failed: 'E' }), ['failure:1:B', 'overwrite:2:B:C', 'overwrite:3:C:D:sent', 'failure:3:E']);
  });
});

/**
 * The chaos run's drain figures, on records written by hand: which step attempts were running at
 * a SIGTERM, what became of each, and which were taken on after it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { drainFigures } from '../../chaos/drain';
import type { TermEvent } from '../../chaos/fleet';
import type { AlertRecord, EffectRecord, RunRecord } from '../../chaos/protocol';

const run = (what: RunRecord['what'], attempt: string, t: number, outcome?: RunRecord['outcome'], slot = 0): RunRecord => (
  { what, key: `k${attempt}`, seq: 1, attempt, slot, incarnation: 0, t, ...(outcome ? { outcome } : {}) });
const effect = (key: string, attempt: string): EffectRecord => ({ key, seq: 1, attempt, retry: 0, slot: 0, incarnation: 0, t: 0 });

describe('chaos drain figures', () => {
  const term: TermEvent = { slot: 0, incarnation: 0, why: 'kill', t: 100, exitT: 200, killed: true };
  const runs = [
    run('entered', 'done', 10), run('left', 'done', 40, 'returned'), // before the SIGTERM: not in flight
    run('entered', 'finished', 50), run('left', 'finished', 150, 'returned'),
    run('entered', 'stopped', 60), run('left', 'stopped', 120, 'aborted'),
    run('entered', 'cut', 70), // never left: SIGKILLed at the end of the grace
    run('entered', 'late', 110), run('left', 'late', 130, 'returned'), // taken on after the SIGTERM
    run('entered', 'elsewhere', 90, undefined, 1), // another worker
  ];
  const alerts: AlertRecord[] = [{ id: 'x', reason: 'overwrite', key: 'kcut', seq: 1, previousAttempt: 'cut', newAttempt: 'again', slot: 1, t: 300 }];
  const effects = [effect('kcut', 'cut'), effect('kcut', 'again'), effect('kfinished', 'finished')];

  it('counts the attempts running at the SIGTERM and what became of each', () => {
    const f = drainFigures([term], runs, effects, alerts);
    assert.equal(f.inFlight, 3, 'finished, stopped and cut');
    assert.equal(f.finished, 1);
    assert.equal(f.handedBackSilently, 1, 'stopped on the signal, named by no alert');
    assert.equal(f.handedBackAlerted, 1, 'cut, and named by an overwrite alert');
    assert.equal(f.cutByKill, 1);
    assert.equal(f.ranTwice, 1, 'the cut step ran again');
    assert.equal(f.startedAfterTerm, 1);
  });

  it('counts nothing without a SIGTERM', () => {
    assert.deepEqual(drainFigures([], runs, effects, alerts), {
      inFlight: 0, finished: 0, handedBackSilently: 0, handedBackAlerted: 0, cutByKill: 0, ranTwice: 0, startedAfterTerm: 0,
    });
  });
});

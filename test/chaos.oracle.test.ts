/**
 * The chaos run's oracle, rule by rule, on records written by hand: it must catch every break it
 * is there to catch, and accept what the rules allow.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { judge, type FinalState } from '../chaos/oracle';
import type { AlertRecord, EffectRecord, RunRecord } from '../chaos/protocol';
import { chance } from '../chaos/random';

let clock = 0;
const effect = (key: string, seq: number, attempt = `a${++clock}`): EffectRecord => ({ key, seq, attempt, retry: 0, slot: 0, incarnation: 0, t: ++clock });
const alert = (reason: string, key: string, seq: number, previousAttempt?: string, id = `id${++clock}`, newAttempt?: string): AlertRecord => (
  { id, reason, key, seq, slot: 0, t: ++clock, ...(previousAttempt ? { previousAttempt } : {}), ...(newAttempt ? { newAttempt } : {}) });
const entered = (key: string, seq: number, attempt: string): RunRecord => ({ what: 'entered', key, seq, attempt, slot: 0, incarnation: 0, t: ++clock });
const left = (key: string, seq: number, attempt: string, outcome: RunRecord['outcome']): RunRecord => ({ what: 'left', key, seq, attempt, outcome, slot: 0, incarnation: 0, t: ++clock });
/** An attempt that ran step `seq` of `key` to the end: entered, its effect, returned. */
const ranOnce = (key: string, seq: number, attempt: string): { runs: RunRecord[]; effects: EffectRecord[] } => (
  { runs: [entered(key, seq, attempt)], effects: [effect(key, seq, attempt)] });
const chain = (key: string, steps: number): EffectRecord[] => Array.from({ length: steps }, (_, i) => effect(key, i + 1));

describe('chaos oracle', () => {
  it('accepts complete chains with one effect per step', () => {
    const v = judge(['a', 'b'], 3, [...chain('a', 3), ...chain('b', 3)], []);
    assert.deepEqual(v.violations, []);
    assert.equal(v.chainsComplete, 2);
    assert.equal(v.steps, 6);
  });

  it('accepts a step run again when each extra run\'s attempt is named overwritten by an alert, and counts it', () => {
    const twice = judge(['a'], 2, [effect('a', 1, 'A'), effect('a', 1, 'B'), effect('a', 2)], [alert('overwrite', 'a', 1, 'A')]);
    assert.deepEqual(twice.violations, []);
    assert.equal(twice.effectsDuplicatedAlerted, 1);
    assert.equal(twice.overwritesAlerted, 1);
    const thrice = judge(['a'], 1, [effect('a', 1, 'A'), effect('a', 1, 'B'), effect('a', 1, 'C')], [alert('overwrite', 'a', 1, 'A'), alert('overwrite', 'a', 1, 'B')]);
    assert.deepEqual(thrice.violations, []);
    assert.equal(thrice.overwritesAlerted, 2);
  });

  it('flags a step run twice without an alert, a run beyond what the alerts cover, and an alert naming another attempt', () => {
    const v = judge(['a', 'b', 'c'], 1, [
      effect('a', 1), effect('a', 1),
      effect('b', 1, 'A'), effect('b', 1, 'B'), effect('b', 1, 'C'),
      effect('c', 1, 'A'), effect('c', 1, 'B'),
    ], [alert('overwrite', 'b', 1, 'A'), alert('overwrite', 'c', 1, 'X')]);
    assert.deepEqual(v.violations.map((x) => [x.chain, x.rule]), [['a', 'duplicate-unalerted'], ['b', 'duplicate-unalerted'], ['c', 'duplicate-unalerted']]);
    assert.equal(v.effectsDuplicatedUnalerted, 3);
    assert.equal(v.duplicatedWithoutAlert, 1);
    assert.equal(v.duplicatedBeyondAlerts, 2);
  });

  it('counts an alert received twice (same id) once, and says how many repeats came', () => {
    const v = judge(['a'], 1, [effect('a', 1, 'A'), effect('a', 1, 'B'), effect('a', 1, 'C')],
      [alert('overwrite', 'a', 1, 'A', 'same'), alert('overwrite', 'a', 1, 'A', 'same')]);
    assert.equal(v.overwritesAlerted, 1);
    assert.equal(v.alertsRepeated, 1);
    assert.deepEqual(v.violations.map((x) => x.rule), ['duplicate-unalerted'], 'one alert, however often received, covers one extra run');
  });

  it('flags a lost step: a chain that stopped without a failure alert', () => {
    const v = judge(['a'], 3, chain('a', 2), []);
    assert.deepEqual(v.violations.map((x) => [x.rule, x.seq]), [['lost-step', 3]]);
    assert.equal(v.lostSteps, 1);
    assert.equal(v.chainsComplete, 0);
  });

  it('accepts a chain that failed with its alert, and flags a step that ran after the failure', () => {
    const failed = judge(['a'], 3, chain('a', 1), [alert('failure', 'a', 2)]);
    assert.deepEqual(failed.violations, []);
    assert.equal(failed.chainsFailed, 1);
    const ranAfter = judge(['a'], 3, chain('a', 3), [alert('failure', 'a', 2)]);
    assert.deepEqual(ranAfter.violations.map((x) => [x.rule, x.seq]), [['ran-after-failure', 3]]);
  });

  it('flags steps out of order, and a step that ran while an earlier one never did', () => {
    const b2 = effect('a', 2);
    const b1 = effect('a', 1);
    assert.deepEqual(judge(['a'], 2, [b2, b1], []).violations.map((x) => x.rule), ['out-of-order']);
    const skipped = judge(['a'], 3, [effect('a', 1), effect('a', 3)], []);
    assert.deepEqual(skipped.violations.map((x) => [x.rule, x.seq]), [['out-of-order', 3], ['lost-step', 2]]);
  });

  it('draws fault decisions from the seed and the label alone', () => {
    assert.equal(chance(7, 'handler', 'throw', 'c00001', 3, 0), chance(7, 'handler', 'throw', 'c00001', 3, 0));
    assert.notEqual(chance(7, 'handler', 'throw', 'c00001', 3, 0), chance(8, 'handler', 'throw', 'c00001', 3, 0));
    const draws = Array.from({ length: 2_000 }, (_, i) => chance(1, 'x', i));
    assert.ok(draws.every((d) => d >= 0 && d < 1));
    const share = draws.filter((d) => d < 0.3).length / draws.length;
    assert.ok(share > 0.25 && share < 0.35, `about 30 % below 0.3 (${share})`);
  });

  describe('lost alerts', () => {
    it('flags an overwrite no alert reports: an attempt cut off in its handler, and another that ran the step', () => {
      const runs = [entered('a', 1, 'A'), entered('a', 1, 'B'), left('a', 1, 'B', 'returned')];
      const v = judge(['a'], 1, [effect('a', 1, 'B')], [], { runs });
      assert.deepEqual(v.violations.map((x) => [x.chain, x.seq, x.rule]), [['a', 1, 'alert-lost']]);
      assert.equal(v.overwritesEvident, 1);
      assert.equal(v.overwriteAlertsLost, 1);
    });

    it('accepts the overwrite alert received once or twice (same id), or a hand-back alert of another reason naming the attempt', () => {
      const runs = [entered('a', 1, 'A'), entered('a', 1, 'B'), left('a', 1, 'B', 'returned')];
      const effects = [effect('a', 1, 'B')];
      for (const alerts of [
        [alert('overwrite', 'a', 1, 'A', 'x', 'B')],
        [alert('overwrite', 'a', 1, 'A', 'x', 'B'), alert('overwrite', 'a', 1, 'A', 'x', 'B')],
        [alert('interrupted', 'a', 1, 'A', 'y')],
      ]) {
        const v = judge(['a'], 1, effects, alerts, { runs });
        assert.deepEqual(v.violations, [], JSON.stringify(alerts));
        assert.equal(v.overwriteAlertsLost, 0);
        assert.equal(v.alertsRepeated, alerts.length - 1);
      }
    });

    it('does not take a failure alert naming the attempt for its overwrite alert', () => {
      const runs = [entered('a', 1, 'A'), entered('a', 1, 'B'), left('a', 1, 'B', 'returned')];
      const v = judge(['a'], 1, [effect('a', 1, 'B')], [alert('failure', 'a', 1, 'A')], { runs });
      assert.equal(v.overwriteAlertsLost, 1);
    });

    it('counts every attempt that held its lease to the end of its run: all but one must be named, whichever entered first', () => {
      // C took the lease first but entered its handler last (its process was blocked between its take and its handler).
      const a = ranOnce('a', 1, 'A');
      const c = ranOnce('a', 1, 'C');
      const runs = [...a.runs, left('a', 1, 'A', 'returned'), entered('a', 1, 'B'), ...c.runs, left('a', 1, 'C', 'returned')];
      const effects = [...a.effects, ...c.effects];
      const named = judge(['a'], 1, effects, [alert('overwrite', 'a', 1, 'C'), alert('overwrite', 'a', 1, 'B')], { runs });
      assert.deepEqual(named.violations, [], 'C named, A the last to take: B (cut off) and C lost their leases');
      assert.equal(named.overwritesEvident, 2);
      const short = judge(['a'], 1, effects, [alert('overwrite', 'a', 1, 'C')], { runs });
      assert.deepEqual(short.violations.map((x) => x.rule), ['alert-lost']);
      assert.equal(short.overwriteAlertsLost, 1);
      assert.match(short.violations[0]!.detail, /3 attempts held the lease/);
    });

    it('requires no alert for an attempt that threw, failed or stopped on the signal before its effect (its outcome released the lease)', () => {
      for (const outcome of ['threw', 'failed', 'aborted'] as const) {
        const runs = [entered('a', 1, 'A'), left('a', 1, 'A', outcome), entered('a', 1, 'B'), left('a', 1, 'B', 'returned')];
        const v = judge(['a'], 1, [effect('a', 1, 'B')], [], { runs });
        assert.deepEqual(v.violations, [], outcome);
        assert.equal(v.overwritesEvident, 0);
      }
    });

    it('requires one for an attempt that recorded its effect and then threw (a lease is kept after the effect)', () => {
      const runs = [entered('a', 1, 'A'), left('a', 1, 'A', 'threw'), entered('a', 1, 'B'), left('a', 1, 'B', 'returned')];
      const v = judge(['a'], 1, [effect('a', 1, 'A'), effect('a', 1, 'B')], [], { runs });
      assert.deepEqual(v.violations.map((x) => x.rule).sort(), ['alert-lost', 'duplicate-unalerted']);
    });

    it('flags a chain stored failed whose failure no alert reported, and counts it failed, not lost', () => {
      const finals = new Map<string, FinalState>([['a', { state: 'failed', seq: 2 }], ['b', { state: 'failed', seq: 2 }], ['c', { state: 'complete', seq: 3 }]]);
      const v = judge(['a', 'b', 'c'], 2, [...chain('a', 1), ...chain('b', 1), ...chain('c', 2)], [alert('failure', 'b', 2, 'F')], { finals });
      assert.deepEqual(v.violations.map((x) => [x.chain, x.seq, x.rule]), [['a', 2, 'alert-lost']]);
      assert.equal(v.failureAlertsLost, 1);
      assert.equal(v.chainsFailed, 2);
      assert.equal(v.lostSteps, 0);
      assert.equal(v.chainsComplete, 1);
    });

    it('flags one alert that came under two ids', () => {
      const v = judge(['a'], 1, [effect('a', 1, 'A'), effect('a', 1, 'B')],
        [alert('overwrite', 'a', 1, 'A', 'one', 'B'), alert('overwrite', 'a', 1, 'A', 'two', 'B')]);
      assert.deepEqual(v.violations.map((x) => x.rule), ['alert-id-differs']);
      assert.equal(v.alertIdsDiffering, 1);
    });
  });
});

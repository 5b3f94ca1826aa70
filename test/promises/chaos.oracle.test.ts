/**
 * The chaos run's oracle, rule by rule, on records written by hand: it must catch every break it
 * is there to catch, and accept what the rules allow.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FanOutPlan } from '../../chaos/fan-out-plan';
import { expectedOutcome, judge, type FinalState } from '../../chaos/oracle';
import type { AlertRecord, EffectRecord, JoinSeen, RunRecord, SeenChild } from '../../chaos/protocol';
import { chance } from '../../chaos/random';

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

  describe('fan-out joins', () => {
    // Chain p (3 steps) fans out at step 1 to children p.f0 (succeeds), p.f1 (fails for good at its step 1) and
    // p.f2 (nests: its own fan-out at step 1 to p.f2.g0 and p.f2.g1, its join at step 2); p's join is step 2.
    const nested: FanOutPlan = { parent: 'p.f2', fanAt: 1, joinSeq: 2, joinPath: '/child-join', policy: {}, children: [{ name: 'p.f2.g0' }, { name: 'p.f2.g1' }] };
    const plan: FanOutPlan = {
      parent: 'p', fanAt: 1, joinSeq: 2, joinPath: '/join', policy: { tolerate: 1 },
      children: [{ name: 'p.f0' }, { name: 'p.f1', failsAt: 1 }, { name: 'p.f2', nested }],
    };
    const fanOuts = new Map([['p', plan], ['p.f2', nested]]);
    const counts = (succeeded: number, failed: number): Record<string, number> => ({ total: succeeded + failed, pending: 0, succeeded, failed, cancelled: 0, timedOut: 0 });
    const seen = (children: SeenChild[], c: Record<string, number>, outcome: string): JoinSeen => ({ id: 'fan', outcome, counts: c, children });
    const joinEffect = (key: string, seq: number, join: JoinSeen, attempt = `a${++clock}`): EffectRecord => ({ ...effect(key, seq, attempt), join });
    const rightOuter = (): JoinSeen => seen([
      { name: 'p.f0', state: 'succeeded', result: { of: 'p.f0' }, error: false },
      { name: 'p.f1', state: 'failed', error: true },
      { name: 'p.f2', state: 'succeeded', result: { of: 'p.f2', joined: 2 }, error: false },
    ], counts(2, 1), 'tolerated');
    const rightNested = (): JoinSeen => seen([
      { name: 'p.f2.g0', state: 'succeeded', result: { of: 'p.f2.g0' }, error: false },
      { name: 'p.f2.g1', state: 'succeeded', result: { of: 'p.f2.g1' }, error: false },
    ], counts(2, 0), 'succeeded');
    /** A run in which everything went right, in time order; `outer` makes the outer join's records instead (at their time). */
    const world = (outer?: () => { effects: EffectRecord[]; runs: RunRecord[] }): { effects: EffectRecord[]; runs: RunRecord[]; alerts: AlertRecord[]; finals: Map<string, FinalState> } => {
      const effects: EffectRecord[] = [effect('p', 1)];
      const runs: RunRecord[] = [];
      for (const g of ['p.f2.g0', 'p.f2.g1']) effects.push(effect(g, 1), effect(g, 2));
      effects.push(effect('p.f0', 1), effect('p.f2', 1));
      runs.push(entered('p.f1', 1, 'F1'), left('p.f1', 1, 'F1', 'failed'));
      runs.push(entered('p.f2', 2, 'N'));
      effects.push(joinEffect('p.f2', 2, rightNested(), 'N'));
      effects.push(effect('p.f0', 2));
      const join = outer?.() ?? { runs: [entered('p', 2, 'J')], effects: [joinEffect('p', 2, rightOuter(), 'J')] };
      runs.push(...join.runs);
      effects.push(...join.effects, effect('p', 3));
      const finals = new Map<string, FinalState>([['p.f1', { state: 'failed', seq: 1 }]]);
      return { effects, runs, alerts: [alert('failure', 'p.f1', 1)], finals };
    };
    const rules = (v: ReturnType<typeof judge>): string[] => v.violations.map((x) => `${x.chain}/${x.seq}/${x.rule}`);

    it('accepts a nested fan-out joined once, after its children, having seen every end; and counts it', () => {
      const w = world();
      const v = judge(['p'], 3, w.effects, w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      assert.deepEqual(v.violations, []);
      assert.equal(v.chainsComplete, 1);
      assert.deepEqual({ ...v.fanOut, outcomes: undefined, joinAfterLastChildMaxMs: undefined }, {
        planned: 2, judged: 2, nested: 1, abandoned: 0, children: 5, childrenSucceeded: 4, childrenFailed: 1, childrenLost: 0, joined: 2, joinRuns: 2,
        joinsFailed: 0, joinsRunAgainAlerted: 0, joinsDuplicatedUnalerted: 0, joinsLost: 0, joinsEarly: 0, joinsMisinformed: 0, outcomes: undefined, joinAfterLastChildMaxMs: undefined,
      });
      assert.deepEqual(v.fanOut.outcomes, { succeeded: 1, tolerated: 1 });
      assert.ok(v.fanOut.joinAfterLastChildMaxMs > 0);
    });

    it('flags a join run twice when no overwrite alert names the extra run, and accepts it when one does', () => {
      const twice = (): { effects: EffectRecord[]; runs: RunRecord[] } => ({ runs: [entered('p', 2, 'J'), entered('p', 2, 'K')], effects: [joinEffect('p', 2, rightOuter(), 'J'), joinEffect('p', 2, rightOuter(), 'K')] });
      const w = world(twice);
      const bad = judge(['p'], 3, w.effects, w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      assert.ok(rules(bad).includes('p/2/join-ran-twice'), rules(bad).join());
      assert.equal(bad.fanOut.joinsDuplicatedUnalerted, 1);
      const alerted = judge(['p'], 3, w.effects, [...w.alerts, alert('overwrite', 'p', 2, 'J')], { runs: w.runs, finals: w.finals, fanOuts });
      assert.deepEqual(alerted.violations, []);
      assert.equal(alerted.fanOut.joinsRunAgainAlerted, 1);
    });

    it('flags a lost join, and accepts a join that failed for good instead', () => {
      const w = world(() => ({ runs: [], effects: [] }));
      const effects = w.effects.filter((e) => !(e.key === 'p' && e.seq === 3));
      const lost = judge(['p'], 3, effects, w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      assert.deepEqual(rules(lost), ['p/2/lost-step', 'p/2/join-lost']);
      assert.equal(lost.fanOut.joinsLost, 1);
      const failed = judge(['p'], 3, effects, [...w.alerts, alert('failure', 'p', 2)], { runs: [...w.runs, entered('p', 2, 'J'), left('p', 2, 'J', 'failed')], finals: w.finals, fanOuts });
      assert.deepEqual(failed.violations, []);
      assert.equal(failed.fanOut.joinsFailed, 1);
    });

    it('flags a fanning step whose effect was lost although its children and join ran (the worker records it before fanOut())', () => {
      const w = world();
      const outer = judge(['p'], 3, w.effects.filter((e) => !(e.key === 'p' && e.seq === 1)), w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      assert.deepEqual(rules(outer), ['p/2/out-of-order', 'p/3/out-of-order', 'p/1/lost-step']);
      assert.equal(outer.lostSteps, 1);
      const inner = judge(['p'], 3, w.effects.filter((e) => !(e.key === 'p.f2' && e.seq === 1)), w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      // p.f2 stuck at its lost step never ended: p's join, which saw it succeeded, came early and misinformed.
      assert.deepEqual(rules(inner), ['p.f2/2/out-of-order', 'p.f2/1/lost-step', 'p/2/join-early', 'p/2/join-misinformed']);
      assert.equal(inner.lostSteps, 1);
    });

    it('flags a join that started before a child ended, or while a child never ended', () => {
      // The join entered before p.f0's last step ran.
      const w = world();
      const f0Last = w.effects.findIndex((e) => e.key === 'p.f0' && e.seq === 2);
      const early = { ...w.effects[f0Last]!, t: ++clock + 1_000 };
      const effects = w.effects.map((e, i) => (i === f0Last ? early : e));
      const v = judge(['p'], 3, effects, w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      assert.deepEqual(rules(v), ['p/2/join-early']);
      assert.match(v.violations[0]!.detail, /before child p\.f0 ended/);
      assert.equal(v.fanOut.joinsEarly, 1);
      // p.f1 neither failed nor ran on: it never ended.
      const stuck = judge(['p'], 3, w.effects, [], { runs: w.runs, fanOuts });
      assert.ok(rules(stuck).includes('p/2/join-early'), rules(stuck).join());
      assert.ok(rules(stuck).includes('p.f1/1/lost-step'));
    });

    it('flags a failed child that settled after the join started (its failing run after the join\'s entry)', () => {
      const w = world();
      const runs = w.runs.map((r) => (r.key === 'p.f1' ? { ...r, t: r.t + 10_000 } : r));
      const v = judge(['p'], 3, w.effects, w.alerts, { runs, finals: w.finals, fanOuts });
      assert.deepEqual(rules(v), ['p/2/join-early']);
    });

    it('flags a join shown a child missing or twice, a wrong state, a missing error, a wrong result, wrong counts or outcome', () => {
      const cases: [string, (j: JoinSeen) => void, RegExp][] = [
        ['missing', (j) => j.children.splice(1, 1), /children not shown: p\.f1/],
        ['twice', (j) => j.children.push(j.children[0]!), /twice: p\.f0/],
        ['stranger', (j) => j.children.push({ name: 'q.f0', state: 'succeeded', error: false }), /not its own, or twice: q\.f0/],
        ['state', (j) => { j.children[1]!.state = 'succeeded'; }, /p\.f1 shown succeeded, ended failed/],
        ['error', (j) => { j.children[1]!.error = false; }, /p\.f1 shown failed without its error/],
        ['result', (j) => { j.children[0]!.result = { of: 'p.f2' }; }, /p\.f0 shown with result/],
        ['nested result', (j) => { j.children[2]!.result = { of: 'p.f2', joined: 1 }; }, /p\.f2 shown with result .*"joined":2/],
        ['counts', (j) => { j.counts.failed = 0; }, /counts\.failed 0, ended 1/],
        ['outcome', (j) => { j.outcome = 'succeeded'; }, /outcome succeeded, the policy \{"tolerate":1\} gives tolerated/],
      ];
      for (const [what, spoil, message] of cases) {
        const j = rightOuter();
        spoil(j);
        const w = world(() => ({ runs: [entered('p', 2, 'J')], effects: [joinEffect('p', 2, j, 'J')] }));
        const v = judge(['p'], 3, w.effects, w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
        assert.deepEqual(rules(v), ['p/2/join-misinformed'], what);
        assert.match(v.violations[0]!.detail, message, what);
        assert.equal(v.fanOut.joinsMisinformed, 1, what);
      }
    });

    it('judges the children as chains: a child\'s step run twice unalerted is flagged', () => {
      const w = world();
      const v = judge(['p'], 3, [...w.effects, effect('p.f0', 1)], w.alerts, { runs: w.runs, finals: w.finals, fanOuts });
      assert.deepEqual(rules(v), ['p.f0/1/duplicate-unalerted']);
    });

    it('leaves a fan-out whose parent failed at its fanning step unjudged (it may never have been sealed)', () => {
      const v = judge(['p'], 3, [], [alert('failure', 'p', 1)], { fanOuts });
      assert.deepEqual(v.violations, []);
      assert.equal(v.fanOut.abandoned, 1);
      assert.equal(v.fanOut.judged, 0);
    });

    it('gives the outcomes the policies give', () => {
      const c = (failed: number): Record<string, number> => ({ total: 3, pending: 0, succeeded: 3 - failed, failed, cancelled: 0, timedOut: 0 });
      assert.equal(expectedOutcome({}, c(0)), 'succeeded');
      assert.equal(expectedOutcome({}, c(3)), 'tolerated');
      assert.equal(expectedOutcome({ require: 'succeeded' }, c(1)), 'failed');
      assert.equal(expectedOutcome({ tolerate: 1 }, c(1)), 'tolerated');
      assert.equal(expectedOutcome({ tolerate: 1 }, c(2)), 'failed');
    });
  });
});

/**
 * `npm run chaos` in small, as a suite each emulator's test file runs: the same harness, the same
 * faults and the same invariants, on 30 chains of 4 steps with a fixed seed, with the workers run
 * as Cloud Run runs them (frozen when idle and scaled in; SIGTERM, a grace, then SIGKILL), in a
 * child process that starts its own emulator (so no other test's data is swept). A share of the
 * chains fan out (children failing by design, every policy, one nested fan-out). The figures the
 * run prints are checked: every chain is accounted for, each kind of fault and each platform event
 * really happened, no worker died unless stopped, and every invariant of the oracle holds: no step
 * ran again unless an overwrite alert names the attempt that lost it, no step was lost, no
 * overwrite or failure went unalerted, every join ran once, after its children settled, and saw
 * each child's end, and the run exits 0.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { EmulatorName } from '../../chaos/options';
import type { ChaosSummary } from '../../chaos/report';

const ROOT = join(__dirname, '..', '..');
const CHAINS = 30;

/** A short run: small load, the default faults, higher rates for the rare ones so each happens. */
const FLAGS = {
  seed: 20261122, chains: CHAINS, steps: 4, burst: 15, 'burst-every-ms': 1_000, 'lease-ms': 4_000,
  'kill-every-ms': 6_000, 'store-fault-every-ms': 3_000, 'outage-ms': 2_000,
  'hang-rate': 0.03, 'loss-rate': 0.03, 'permanent-rate': 0.02, 'settle-ms': 20_000,
  // The platform: request-time CPU and scale-in, SIGTERM and the grace; short slow handlers; an
  // alertTimeout (at most a third of the lease) that brings the sweep's re-sends inside the final sweeps, and sweeps more often
  // (with drains, the run would otherwise take longer than it did without the modes).
  'freeze-idle': 'on', 'scale-in-after-ms': 3_000, sigterm: 'on', 'slow-rate': 0.05, 'slow-ms': 3_000,
  'alert-timeout-ms': 1_300, 'alert-settle-ms': 6_000, 'sweep-every-ms': 2_500,
  // Fan-out: with this seed, 9 fan-outs of 3 children (one nested), under each policy, some children failing by design.
  'fan-out-share': 0.3, 'fan-out-children': 3,
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  summary: ChaosSummary;
}

/** Which emulator a file runs the suite on, and how long its run may take. */
export interface ChaosSuiteOptions {
  emulator: EmulatorName;
  /** How long the chaos run's process may take before it is killed, ms. */
  runTimeoutMs: number;
}

function runChaos(o: ChaosSuiteOptions): Promise<Run> {
  const args = [...Object.entries(FLAGS).flatMap(([name, value]) => [`--${name}`, String(value)]), '--emulator', o.emulator];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', join('chaos', 'main.ts'), ...args], { cwd: ROOT, timeout: o.runTimeoutMs, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      try {
        resolve({ code, stdout, stderr, summary: JSON.parse(stdout.trimEnd().split('\n').at(-1)!) as ChaosSummary });
      } catch {
        reject(new Error(`the chaos run printed no JSON line last (exit ${code}):\n${stdout.slice(-3000)}\n${stderr.slice(-3000)}`));
      }
    });
  });
}

/** The suite, on `o.emulator` (call once, at a test file's top level). */
export function chaosSuite(o: ChaosSuiteOptions): void {
  describe(`npm run chaos -- --emulator ${o.emulator} (a short seeded run)`, { timeout: o.runTimeoutMs + 60_000 }, () => {
    let run: Run;
    before(async () => {
      run = await runChaos(o);
    }, { timeout: o.runTimeoutMs + 30_000 });

    it('finishes with a verdict (0: every invariant held, 1: one broke), a table, and one JSON line last', () => {
      assert.ok(run.code === 0 || run.code === 1, `exit code ${run.code}:\n${run.stderr.slice(-3000)}`);
      assert.match(run.stdout, /Chaos run\n/);
      const s = run.summary;
      for (const name of [
        'deliveries', 'chains', 'steps', 'duplicatesDelivered', 'effectsDuplicatedUnalerted', 'overwritesAlerted', 'lostSteps', 'chainsComplete', 'chainsFailed',
        'workerKills', 'storeFaults', 'tasksLost', 'overwritesEvident', 'overwriteAlertsLost', 'failureAlertsLost', 'alertsLost', 'freezes', 'thaws', 'scaleIns',
        'sigterms', 'sigkillsAfterGrace', 'drainInFlight', 'drainFinished', 'drainHandedBackSilently', 'drainHandedBackAlerted', 'drainCutByKill', 'drainRanTwice',
        'drainStartedAfterTerm', 'fanOuts', 'fanOutsJudged', 'fanOutsNested', 'fanOutChildren', 'fanOutChildrenSucceeded', 'fanOutChildrenFailed', 'joins',
        'joinRuns', 'joinsRunAgainAlerted', 'joinsDuplicatedUnalerted', 'joinsLost', 'joinsEarly', 'joinsMisinformed', 'joinAfterLastChildMaxMs',
        'stepP50Ms', 'stepP99Ms', 'recoveryMaxMs', 'wallMs', 'seed',
      ] as const) {
        assert.equal(typeof s[name], 'number', `${name} is a number`);
      }
      assert.equal(typeof s.drainAnswersAfterTerm, 'object', 'drainAnswersAfterTerm counts answers by status');
      assert.equal(s.seed, FLAGS.seed);
      assert.equal(s.emulator, o.emulator, 'the run was on the emulator asked for');
      assert.equal(run.code === 0, s.violations === 0, 'the exit code says whether an invariant broke');
      if (s.violations > 0) assert.match(run.stdout, /History of c\d+:/, 'a broken invariant prints the history of its chain');
    });

    it('accounts for every chain: complete, failed with its alert, or stuck at a lost step', () => {
      const s = run.summary;
      assert.equal(s.chains, CHAINS);
      assert.equal(s.chainsComplete + s.chainsFailed + s.lostSteps, CHAINS);
      assert.ok(s.chainsComplete > CHAINS / 2, `most chains completed (${s.chainsComplete})`);
      assert.ok(s.steps >= s.chainsComplete * FLAGS.steps);
    });

    it('ran under every kind of fault: duplicates, kills, store faults, lost tasks', () => {
      const s = run.summary;
      assert.ok(s.duplicatesDelivered > 0, 'duplicates were delivered');
      assert.ok(s.workerKills > 0, 'workers were killed');
      assert.ok(s.storeFaults > 0, 'the store connection failed');
      assert.ok(s.tasksLost > 0, 'the dispatcher lost tasks');
      assert.match(run.stdout, /store faults +\d+ resets, \d+ delay windows, 1 outage/, 'one store outage');
      assert.match(run.stdout, /answers +.*500: \d+/, 'handlers threw');
    });

    it('ran as the platform runs: workers frozen after their last answer and thawed for the next request, idle ones scaled in, every stop a SIGTERM', () => {
      const s = run.summary;
      assert.ok(s.freezes > 0, 'workers were frozen');
      assert.ok(s.thaws > 0, 'frozen workers were thawed');
      assert.ok(s.thaws <= s.freezes, `no thaw without a freeze (${s.thaws} thaws, ${s.freezes} freezes)`);
      assert.ok(s.scaleIns > 0, 'idle workers were scaled in');
      assert.ok(s.sigterms >= s.workerKills + s.scaleIns, `every stop was a SIGTERM (${s.sigterms} for ${s.workerKills} kills and ${s.scaleIns} scale-ins)`);
      assert.match(run.stdout, /scheduler sweeps \(answers\) +\d+ \(.*200: \d+/, 'the sweep came as requests, and ran');
      assert.ok(s.drainInFlight >= s.drainCutByKill && s.drainInFlight >= s.drainHandedBackSilently, 'the drain figures add up');
    });

    it('no worker died except those killed on purpose', () => {
      assert.equal(run.summary.workerDeaths, 0, run.stdout.slice(-3000));
    });

    it('no step ran again without an overwrite alert naming the attempt that lost it', () => {
      assert.equal(run.summary.effectsDuplicatedUnalerted, 0, run.stdout.slice(-4000));
    });

    it('no step is lost', () => {
      assert.equal(run.summary.lostSteps, 0, run.stdout.slice(-4000));
    });

    it('no alert is lost: every overwrite the handlers\' records show, and every failure stored, reached the alerter', () => {
      assert.ok(run.summary.overwritesEvident > 0, 'the run records showed overwrites');
      assert.equal(run.summary.alertsLost, 0, run.stdout.slice(-4000));
    });

    it('ran fan-outs: nested, with children that failed for good, and every judged one joined (or its join failed for good)', () => {
      const s = run.summary;
      assert.ok(s.fanOutsJudged > 0 && s.fanOutsJudged <= s.fanOuts, `fan-outs judged (${s.fanOutsJudged} of ${s.fanOuts})`);
      assert.ok(s.fanOutsNested > 0, 'a nested fan-out was judged');
      assert.ok(s.fanOutChildrenFailed > 0, 'children failed for good');
      assert.ok(s.fanOutChildrenSucceeded > 0, 'children succeeded');
      assert.ok(s.joins > 0 && s.joinRuns >= s.joins, `joins ran (${s.joins}, in ${s.joinRuns} runs)`);
      assert.ok(Object.keys(s.joinOutcomes).length >= 2, `the joins were told more than one outcome (${JSON.stringify(s.joinOutcomes)})`);
      assert.match(run.stdout, /fan-outs planned \/ judged/, 'the table shows the fan-out figures');
    });

    it('every join ran once, after every child settled, and saw every child\'s end', () => {
      const s = run.summary;
      assert.equal(s.joinsDuplicatedUnalerted, 0, run.stdout.slice(-4000));
      assert.equal(s.joinsLost, 0, run.stdout.slice(-4000));
      assert.equal(s.joinsEarly, 0, run.stdout.slice(-4000));
      assert.equal(s.joinsMisinformed, 0, run.stdout.slice(-4000));
    });

    it('every invariant holds (exit code 0)', () => {
      assert.equal(run.code, 0, run.stdout.slice(-4000));
    });
  });
}

/**
 * SIGKILL of the process whose parent step is starting a fan-out's children, at each point of it,
 * then a restart (`support/fan-crash-app.ts`), on both Datastore emulators: the restarted process's
 * sweep re-delivers the parent's step (or, once sealed, the children), which resumes; no child
 * chain is started twice, every child runs once, and the join runs once, after every child
 * settled, seeing every child. The in-memory store cannot outlive a killed process: there the same
 * points are covered by faults thrown at the seam (`fanout-suite.ts`, "the parent fails at …").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Datastore } from '@google-cloud/datastore';
import { childChain, fanOutId } from '../../src/fanout/records';
import { crashAppEnd, runCrashApp, stopCrashApp, untilCrashApp, type CrashAppRun } from '../support/crash-app-run';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { LONG, pointsToRun } from '../support/test-scale';

const CHILDREN = 150;
const POINTS = ['before-header', 'mid-pages', 'before-seal', 'after-seal'] as const;

type Run = CrashAppRun;

function run(env: Record<string, string>): Run {
  return runCrashApp('test/support/fan-crash-app.ts', { CHILDREN: String(CHILDREN), LEASE_MS: '3000', STALL_MS: '3000', SWEEP_MS: '200', ...env });
}

const stop = stopCrashApp;

function until<T>(what: string, check: () => Promise<T | undefined>, app: Run, limitMs = 300_000): Promise<T> {
  return untilCrashApp(what, check, app, limitMs, 250);
}

// `npm run test:long` runs one emulator's four points at a time (eight killed apps at once strain
// two cores and the legacy emulator).
const EMULATORS = [['legacy', legacyDatastore], ['firestore', firestoreDatastore]] as const;
// `npm test`: one point on one emulator, both drawn at random and named in the title (the two
// points, one per emulator, it ran before took 86 s of CPU, 2026-11-29); `npm run test:long`: every
// point on both.
const RUN = pointsToRun(EMULATORS.flatMap(([emulator]) => POINTS.map((point) => ({ emulator, point }))));

describe('SIGKILL while a parent starts its children, on both emulators', { concurrency: !LONG }, () => {
  for (const [emulator, open] of EMULATORS) {
    const points = RUN.filter((r) => r.emulator === emulator).map((r) => r.point);
    if (points.length === 0) continue;
    const datastore: Datastore = open();
    // The four points run side by side (each its own namespace, parent and processes): on the
    // Firestore emulator three of them wait out a dead transaction's 60 s, which need not add up.
    describe(`SIGKILL while a parent starts 150 children, then a restart (${emulator === 'legacy' ? 'the Datastore emulator' : 'the Firestore emulator in Datastore mode'})`, { concurrency: true }, () => {
      for (const point of points) {
        // A process killed inside a transaction on Firestore (the header's `writing`, a page's, which
        // reads the header, or the seal's, before its commit) leaves that transaction's locks until
        // Firestore expires it: 60 s after its last use, on the service ("Transactions expire after
        // 270 seconds or if idle for 60 seconds") and on its emulator alike (measured: a transaction
        // on the emulator whose process was SIGKILLed blocks others with "Transaction lock timeout"
        // for 60 s, then is gone). Meanwhile the resumed parent's attempt holds its lease and waits.
        // With the 3 s lease the other points use, that lease lapses and is taken over about 20
        // times in those 60 s, each a retry, and the step fails for good after 5 (as the library
        // promises for a lease that keeps expiring). So these three points run with the default lease,
        // 60 s, as long as Firestore's idle expiry: the restarted process takes the dead attempt's
        // lease over once (alerted), waits out the dead transaction, and finishes (`stallAfter` may not
        // be shorter than the lease, so it is 60 s too). The legacy
        // emulator, which does not lock on reads, keeps the short lease.
        const lockedByDeadTransaction = emulator === 'firestore' && point !== 'after-seal';
        it(`killed ${point}: resumed, no child started twice, each child ran once, the join ran once after all settled and saw them all`, { timeout: 400_000 }, async () => {
          const namespace = uniqueNamespace(`fan-kill-${point}`);
          const env = { NAMESPACE: namespace, EMULATOR: emulator, PARENT: 'order', ...(lockedByDeadTransaction ? { LEASE_MS: '60000', STALL_MS: '60000' } : {}) };
          const first = run({ ...env, START: '1', CRASH_AT: point, DROP_CHILDREN: '1' });
          const ended = await crashAppEnd(first, 120_000);
          if (!ended) await stop(first);
          assert.equal(ended?.signal, 'SIGKILL', `the app died ${point}\n${first.out.join('').slice(-3000)}`);
          assert.match(first.out.join(''), new RegExp(`killed at ${point}`));

          const second = run(env);
          try {
            const get = async (kind: string, name: string): Promise<Record<string, unknown> | undefined> => {
              const [entity] = await datastore.get(datastore.key({ namespace, path: [kind, name] }));
              return entity as Record<string, unknown> | undefined;
            };
            // The parent's lock, in the failure message: a parent that failed for good fails the test
            // at once, saying why, instead of after the wait.
            const lockOf = (p: Record<string, unknown> | undefined): string => JSON.stringify(Object.fromEntries(Object.entries(p ?? {}).filter(([k]) => k.startsWith('lock_'))));
            let parentLock = '';
            try {
              await until('the parent complete', async () => {
                const p = await get('FanCrashOrder', 'order');
                parentLock = lockOf(p);
                if (p?.lock_state === 'failed') throw new Error(`the parent failed for good: ${parentLock}\n${second.out.join('').slice(-4000)}`);
                return p?.lock_state === 'complete' ? true : undefined;
              }, second);
            } catch (error) {
              // And where the children are (state and step, counted), which says what the join waits
              // for; of those not complete, whether their step still has its ledger record (the
              // sweep delivers a stalled step again only through it: a scheduled child without one
              // waits for good).
              const children = new Map<string, number>();
              const stuck: string[] = [];
              for (let i = 0; i < CHILDREN; i++) {
                const line = await get('FanCrashLine', `line-${i}`).catch(() => undefined);
                const where = `${String(line?.lock_state)}@${String(line?.lock_seq)}`;
                children.set(where, (children.get(where) ?? 0) + 1);
                if (line?.lock_state !== 'complete' && stuck.length < 10) {
                  const record = typeof line?.lock_task === 'string' ? await get('LockerOutbox', line.lock_task).catch(() => undefined) : undefined;
                  stuck.push(`line-${i} ${where} ledger record ${record ? JSON.stringify({ task: record.task, sends: record.sends, due: record.due }) : 'missing'}`);
                }
              }
              // Both processes' whole output, in a file: the message keeps only its tail (the app
              // prints what has waited over 10 s, and every 30 s its queue's and sweeps' counts).
              const saved = path.join(os.tmpdir(), `${namespace}.log`);
              writeFileSync(saved, `${first.out.join('')}\n===== the restarted process =====\n${second.out.join('')}`);
              throw new Error(`${error instanceof Error ? error.message : String(error)}\nthe parent's lock: ${parentLock}\nthe children (state@step: how many): ${JSON.stringify(Object.fromEntries(children))}\nchildren not complete (first 10): ${stuck.join('; ')}\nboth processes' output: ${saved}`);
            }
            // A few more sweeps (each `SWEEP_MS`): nothing runs again.
            await new Promise((resolve) => setTimeout(resolve, 3_000));
            const parent = await get('FanCrashOrder', 'order');
            assert.equal(parent?.joinRuns, 1, 'the join step finished once');
            assert.equal(parent?.notEnded, '', 'every child chain had ended when the join ran');
            assert.deepEqual([parent?.total, parent?.pending, parent?.seen, parent?.outcome], [CHILDREN, 0, CHILDREN, 'succeeded'], 'the join saw every child succeed, with its result');
            assert.equal(parent?.lock_seq, 3, 'step 1 fanned out, step 2 joined');
            const id = fanOutId(datastore.key({ namespace, path: ['FanCrashOrder', 'order'] }), String(parent?.lock_chain), 1);
            for (let i = 0; i < CHILDREN; i++) {
              const line = await get('FanCrashLine', `line-${i}`);
              const key = datastore.key({ namespace, path: ['FanCrashLine', `line-${i}`] });
              assert.equal(line?.lock_chain, childChain(id, key), `line ${i} runs the fan-out's chain for it`);
              assert.deepEqual([line?.lock_state, line?.lock_seq], ['complete', 2], `line ${i}: one chain of one step, started once`);
              assert.equal(line?.runs, 1, `line ${i}'s step finished once`);
              assert.ok(Number((await get('FanCrash', `child-${i}`))?.runs) >= 1, `line ${i}'s handler ran`);
            }
          } finally {
            await stop(second);
          }
        });
      }
    });
  }
});

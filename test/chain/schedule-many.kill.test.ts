/**
 * SIGKILL in the middle of a 5,000-item `locker.scheduleMany()`, then the same call again: every
 * item's chain started exactly once and completed, and no chain is left without a task once the
 * sweep ran. A child process (`support/bulk-crash-app.ts`) runs the call on the legacy Datastore
 * emulator and kills itself just before the Nth lookup, commit or task (N random, printed), at the
 * seams: the store's generated client and the queue.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { kickoffChainId } from '../../src/rules/kickoff-plan';
import { keyString } from '../../src/keys/keys';
import { StepState } from '../../src/types';
import { crashAppEnd, runCrashApp, stopCrashApp, untilCrashApp, type CrashAppRun } from '../support/crash-app-run';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { readAll } from './schedule-many-suite';
import { BATCH } from '../../src/chain/schedule-many';
import { pointsToRun, scaled } from '../support/test-scale';

/** 5,000 items in `npm run test:long`, 1,000 (8 batches) in `npm test`. */
const ITEMS = scaled(1_000, 5_000);
const datastore = legacyDatastore();

type Run = CrashAppRun;

function run(env: Record<string, string>): Run {
  return runCrashApp('test/support/bulk-crash-app.ts', { ITEMS: String(ITEMS), STALL_MS: '3000', LEASE_MS: '3000', SWEEP_MS: '300', ...env });
}

const stop = stopCrashApp;

function until<T>(what: string, check: () => Promise<T | undefined>, app: Run, limitMs = 240_000): Promise<T> {
  return untilCrashApp(what, check, app, limitMs, 300);
}

/** Where to kill: before the Nth call of a kind, N random in the range where the call is busy with that kind. */
const POINTS = [
  { at: 'lookup', range: [2, ITEMS / BATCH] },
  { at: 'commit', range: [1, (2 * ITEMS) / BATCH] },
  { at: 'enqueue', range: [1, ITEMS] },
] as const;

const store = new DatastoreStore(datastore);
after(() => store.shutdown());

describe('SIGKILL during a 5,000-item scheduleMany(), then the same call again (Datastore emulator)', { concurrency: true }, () => {
  // `npm test`: one point, at random; `npm run test:long`: all three.
  for (const point of pointsToRun(POINTS)) {
    const n = point.range[0] + Math.floor(Math.random() * (point.range[1] - point.range[0] + 1));
    it(`killed before ${point.at} #${n}: every chain started exactly once and completed`, { timeout: 400_000 }, async () => {
      const namespace = uniqueNamespace(`bulk-kill-${point.at}`);
      const kickoffId = `kill-${point.at}-${n}`;
      const keys: Key[] = Array.from({ length: ITEMS }, (_, i) => datastore.key({ namespace, path: ['BulkInvoice', `invoice-${i}`] }));
      const chainOf = (key: Key): string => kickoffChainId(kickoffId, keyString(key));

      const first = run({ NAMESPACE: namespace, KICKOFF_ID: kickoffId, KILL_AT: point.at, KILL_AFTER: String(n) });
      const ended = await crashAppEnd(first, 120_000);
      if (!ended) await stop(first);
      assert.equal(ended?.signal, 'SIGKILL', `the app died at ${point.at} #${n}\n${first.out.join('').slice(-3000)}`);
      assert.match(first.out.join(''), new RegExp(`killed at ${point.at} #${n}`));
      // A commit the killed process had already sent may still be applied by the emulator after the
      // kill: count the chains it started once two reads a second apart agree.
      const startedNow = async (): Promise<number> => (await readAll(store, keys)).filter((p, i) => p?.lock_chain === chainOf(keys[i]!)).length;
      let startedBefore = await startedNow();
      for (let again = 0; again < 10; again++) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const now = await startedNow();
        if (now === startedBefore) break;
        startedBefore = now;
      }
      assert.ok(startedBefore < ITEMS || point.at === 'enqueue', `the kill cut the call short (${startedBefore} chains started)`);

      const second = run({ NAMESPACE: namespace, KICKOFF_ID: kickoffId });
      try {
        const line = await until('result line', async () => /bulk-crash-app result (\{.*\})/.exec(second.out.join(''))?.[1], second);
        const result = JSON.parse(line) as { started: number; busy: number; failed: number; resumed: number; failures: string[] };
        assert.deepEqual([result.started, result.busy, result.failed], [ITEMS, 0, 0], `the second call: ${line}`);
        assert.equal(result.resumed, startedBefore, 'the second call recognised every chain the first had started');

        const done = await until('every chain complete', async () => {
          const props = await readAll(store, keys);
          return props.every((p) => p?.lock_state === StepState.complete) ? props : undefined;
        }, second);
        done.forEach((p, i) => {
          assert.equal(p!.lock_chain, chainOf(keys[i]!), `invoice ${i} runs the kickoff's chain`);
          assert.equal(p!.lock_seq, 2, `invoice ${i}: one chain of one step (started once)`);
          assert.equal(p!.runs, 1, `invoice ${i}: its step ran once`);
          assert.equal(p!.customer, `c-${i}`);
        });
        // Records left by the kill (a batch's records committed, its entities not) are cleared by the sweep once due.
        const ledger = new DatastoreStore(datastore, { namespaces: [namespace] });
        await until('an empty ledger', async () => {
          const due = await ledger.listDue(new Date(Date.now() + 86_400_000), 10_000);
          return due.records.some((r) => r.key.namespace === namespace) ? undefined : true;
        }, second, 60_000).finally(() => ledger.shutdown());
      } finally {
        await stop(second);
      }
    });
  }
});

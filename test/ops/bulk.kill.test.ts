/**
 * SIGKILL in the middle of a bulk retry's page, then the app again: the operation resumes from the
 * cursor its last finished page stored, acts on no target twice, and reaches done. A child process
 * (`support/operation-crash-app.ts`) runs on the legacy Datastore emulator: 250 chains that fail
 * for good, then a bulk retry of them (three pages of 100), killed just before the task of the Nth
 * retried chain (N random within the second page, printed) is created; a second process serves and
 * sweeps. The chains whose number is a multiple of 5 fail again when retried: a second retry of
 * one would run it a third time.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Key } from '@google-cloud/datastore';
import { DatastoreStore } from '../../src/store/datastore/store';
import { StepState } from '../../src/types';
import { operationKey } from '../../src/ops/bulk/operation';
import { viewOperation, type OperationView } from '../../src/ops/bulk/view';
import { crashAppEnd, runCrashApp, stopCrashApp, untilCrashApp, type CrashAppRun } from '../support/crash-app-run';
import { legacyDatastore, uniqueNamespace } from '../support/emulator';
import { readAll } from '../chain/schedule-many-suite';

const ITEMS = 250;
const datastore = legacyDatastore();
const store = new DatastoreStore(datastore);
after(() => store.shutdown());

function run(env: Record<string, string>): CrashAppRun {
  return runCrashApp('test/support/operation-crash-app.ts', { ITEMS: String(ITEMS), STALL_MS: '3000', LEASE_MS: '3000', SWEEP_MS: '300', ...env });
}

function until<T>(what: string, check: () => Promise<T | undefined>, app: CrashAppRun, limitMs = 240_000): Promise<T> {
  return untilCrashApp(what, check, app, limitMs, 300);
}

/** How many lines of `out` are `word name`, by name. */
function tally(out: string, word: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const m of out.matchAll(new RegExp(`^${word} (\\S+)$`, 'gm'))) counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  return counts;
}

describe('SIGKILL in the middle of a bulk retry, then the app again (Datastore emulator)', () => {
  const n = 101 + Math.floor(Math.random() * 90);
  it(`killed before the task of retried chain #${n}: the operation resumes, acts on no chain twice and reaches done`, { timeout: 400_000 }, async () => {
    const namespace = uniqueNamespace('op-kill');
    const opId = `kill-test-${n}`;
    const keys: Key[] = Array.from({ length: ITEMS }, (_, i) => datastore.key({ namespace, path: ['CrashOrder', `order-${i}`] }));
    const first = run({ NAMESPACE: namespace, OP_ID: opId, PHASE: 'seed', KILL_AFTER: String(n) });
    const ended = await crashAppEnd(first, 240_000);
    if (!ended) await stopCrashApp(first);
    assert.equal(ended?.signal, 'SIGKILL', `the app died before task #${n}\n${first.out.join('').slice(-3000)}`);
    assert.match(first.out.join(''), /operation-crash-app seeded/);
    const second = run({ NAMESPACE: namespace, OP_ID: opId, PHASE: 'resume' });
    try {
      const op = await until<OperationView>('the operation done', async () => {
        const view = viewOperation(opId, await store.get(operationKey(opId, namespace)), Date.now());
        return view?.chain === 'done' ? view : undefined;
      }, second);
      await until('every chain ended', async () => {
        const props = await readAll(store, keys);
        return props.every((p) => p?.lock_state === StepState.complete || p?.lock_state === StepState.failed) ? true : undefined;
      }, second);
      const props = await readAll(store, keys);
      const out = first.out.join('') + second.out.join('');
      const runs = tally(out, 'run');
      const retried = tally(out, 'retried');
      const overwritten = new Set([...out.matchAll(/^alert overwrite (\S+)$/gm)].map((m) => m[1]!));
      keys.forEach((key, i) => {
        const name = key.name!;
        assert.equal(props[i]?.lock_state, i % 5 === 0 ? StepState.failed : StepState.complete, `${name} ended as its handler says`);
        const count = runs.get(name) ?? 0;
        // Its failed run, then its retried run once; a third only after a takeover of that run (alerted).
        if (overwritten.has(name)) assert.ok(count === 2 || count === 3, `${name} ran ${count} times after a takeover`);
        else assert.equal(count, 2, `${name} ran ${count} times: retried once`);
        assert.ok((retried.get(name) ?? 0) <= 1, `${name} retried ${retried.get(name)} times`);
      });
      assert.equal(op.state, 'done');
      assert.equal(op.matched, ITEMS);
      assert.equal(op.failed, 0, op.errors.join('; '));
      assert.ok(op.done + op.skipped <= ITEMS, `counted at most once each: ${op.done} done, ${op.skipped} skipped`);
      assert.ok(op.done >= ITEMS - 100, `the pages after the kill counted theirs: ${op.done} done`);
      assert.match(out, /^audit bulk operation started .*"by":"kill-test"/m);
      assert.match(out, /^audit bulk operation done .*"operation":"kill-test-/m);
    } finally {
      await stopCrashApp(second);
    }
  });
});

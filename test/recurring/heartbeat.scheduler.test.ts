/**
 * The heartbeat as Cloud Scheduler calls it (test/support/cloud-scheduler.ts: an OIDC token from
 * the loopback issuer, the attempt deadline), on the sweep route behind oidcAuthenticator(), on the
 * in-memory store and both Datastore emulators:
 * - a tick delivered three times at once (Scheduler is at least once) starts the minute's run once;
 * - an attempt cut at its deadline while the tick runs: the tick goes on in the process, and the
 *   next minute's job starts the next run, nothing twice.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { oidcAuthenticator } from '../../src/auth/oidc';
import { MemoryStore } from '../../src/store/memory/store';
import { DatastoreStore } from '../../src/store/datastore/store';
import type { Store } from '../../src/types';
import { runSchedulerJob, type SchedulerJob } from '../support/cloud-scheduler';
import { startOidcIssuer, type OidcIssuer } from '../support/oidc-issuer';
import { firestoreDatastore, legacyDatastore, uniqueNamespace } from '../support/emulator';
import { assertEachStepOnce, recurringRig, runsOf } from './recurring-rig';

const SCHEDULER = 'scheduler@demo-project.iam.gserviceaccount.com';

/** The store, with every transaction made to wait `delayMs` first while `slow` is set (a slow backend, at the seam). */
function slowable(inner: Store): { store: Store; slow: { delayMs: number } } {
  const slow = { delayMs: 0 };
  const store = new Proxy(inner, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property !== 'transaction' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        if (slow.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, slow.delayMs));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, slow };
}

for (const [name, open] of [
  ['the in-memory store', async () => ({ store: new MemoryStore() as Store, namespace: 'hb', close: async () => undefined })],
  ['the Datastore emulator', async () => {
    const namespace = uniqueNamespace('hb');
    const store = new DatastoreStore(legacyDatastore(), { namespaces: [namespace] });
    return { store: store as Store, namespace, close: () => store.shutdown() };
  }],
  ['the Firestore emulator in Datastore mode', async () => {
    const namespace = uniqueNamespace('hb');
    const store = new DatastoreStore(firestoreDatastore(), { namespaces: [namespace] });
    return { store: store as Store, namespace, close: () => store.shutdown() };
  }],
] as const) {
  describe(`the heartbeat through the Cloud Scheduler model, on ${name}`, () => {
    let issuer: OidcIssuer;
    let opened: Awaited<ReturnType<typeof open>>;
    before(async () => { [issuer, opened] = await Promise.all([startOidcIssuer(), open()]); });
    after(async () => { await Promise.all([issuer.close(), opened.close()]); });

    it('a tick delivered three times at once starts the run once; a cut attempt\'s tick finishes, and the next minute runs once', async () => {
      const { store, slow } = slowable(opened.store);
      const rig = recurringRig(store, `${opened.namespace}-${Date.now().toString(36)}`, Date.UTC(2026, 0, 5, 9, 59, 30));
      const locker = rig.instance();
      locker.recurring('minutely', { cron: '* * * * *', path: '/run' });
      const app = express();
      const server = app.listen(0, '127.0.0.1');
      await new Promise<void>((resolve) => server.once('listening', () => resolve()));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      app.post('/sweep', locker.sweepHandler({ authenticate: oidcAuthenticator({ audience: base, serviceAccountEmail: SCHEDULER, client: issuer.client() }) }));
      const job: SchedulerJob = { uri: `${base}/sweep`, serviceAccountEmail: SCHEDULER, audience: base };
      try {
        const first = await runSchedulerJob(job, issuer);
        assert.equal(first.status, 200, first.body);
        assert.equal((JSON.parse(first.body) as { recurring: { declared: number } }).recurring.declared, 1);
        assert.equal((await runSchedulerJob({ ...job, serviceAccountEmail: 'stranger@example.com' }, issuer)).status, 403, 'only the scheduler\'s account ticks');

        rig.now = Date.UTC(2026, 0, 5, 10, 0, 5);
        const three = await Promise.all([runSchedulerJob(job, issuer), runSchedulerJob(job, issuer), runSchedulerJob(job, issuer)]);
        assert.ok(three.every((r) => r.status === 200 || r.status === 429), three.map((r) => `${r.status} ${r.body}`).join('\n'));
        await rig.deliverAll();
        assert.deepEqual(runsOf(rig, 'minutely'), ['2026-01-05T10:00:00.000Z']);

        // The 10:01 tick on a slow store: Scheduler gives up on its attempt after 100 ms; the tick goes on.
        rig.now = Date.UTC(2026, 0, 5, 10, 1, 5);
        slow.delayMs = 150;
        const cut = await runSchedulerJob({ ...job, attemptDeadlineMs: 100 }, issuer);
        assert.equal(cut.status, 0, 'the attempt was cut at its deadline');
        const deadline = Date.now() + 30_000;
        while (rig.queue.tasks.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        slow.delayMs = 0;
        await rig.deliverAll();
        assert.deepEqual(runsOf(rig, 'minutely'), ['2026-01-05T10:00:00.000Z', '2026-01-05T10:01:00.000Z'], 'the cut attempt\'s tick started its run');

        // The cut attempt's sweep goes on after its tick (single-flight: a call while it runs would
        // get its counts): the next minute's job comes once it ended, as it would a minute later.
        while (Date.now() < deadline) {
          const [view] = (await locker.inspect().schedules()).schedules;
          if (view?.started === 2) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        rig.now = Date.UTC(2026, 0, 5, 10, 2, 5);
        const next = await runSchedulerJob(job, issuer);
        assert.equal(next.status, 200, next.body);
        await rig.deliverAll();
        assert.deepEqual(runsOf(rig, 'minutely'), ['2026-01-05T10:00:00.000Z', '2026-01-05T10:01:00.000Z', '2026-01-05T10:02:00.000Z']);
        assertEachStepOnce(rig);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await locker.shutdown();
      }
    });
  });
}

/**
 * The example app recovers from a SIGKILL: on the Datastore emulator (the in-memory store forgets
 * everything on exit), the app is killed as soon as it has kicked off its chains, then started
 * again without autostart. It lists the chains it found unfinished, and the sweep brings every
 * chain to complete within about stallAfter plus one sweep interval.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore, type Key } from '@google-cloud/datastore';
import { keyPath } from '../../src/index';
import { fetchStatus, startExample, waitFor, type ExampleProcess } from '../support/example-process';
import { legacyDatastore } from '../support/emulator';

const skip = process.env.DATASTORE_EMULATOR_HOST ? false : 'DATASTORE_EMULATOR_HOST is not set (npm test starts the emulator)';

describe('example app: SIGKILL, then a restart on the Datastore emulator', { skip }, () => {
  const running: ExampleProcess[] = [];
  after(async () => { for (const app of running) await app.stop(); });

  it('lists the chains left unfinished and brings every chain to complete', async () => {
    const namespace = `example-restart-${process.pid}-${Date.now()}`;
    const env = {
      DATASTORE_EMULATOR_HOST: process.env.DATASTORE_EMULATOR_HOST!,
      DATASTORE_PROJECT_ID: process.env.DATASTORE_PROJECT_ID ?? 'locker-test',
      EXAMPLE_NAMESPACE: namespace,
      METADATA_SERVER_DETECTION: 'none',
      EXAMPLE_LEASE_DURATION_MS: '1000',
      EXAMPLE_STALL_AFTER_MS: '1500',
      EXAMPLE_SWEEP_INTERVAL_MS: '200',
    };
    const first = await startExample(env);
    running.push(first);
    await waitFor('the counter chain to start', async () => (/counter \S+ started/.test(first.stdout()) ? true : undefined), 30_000);
    process.kill(first.child.pid!, 'SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));

    // What the killed run left behind, read from the emulator.
    const datastore = legacyDatastore();
    const left: string[] = [];
    for (const kind of ['Counter', 'Order']) {
      const [entities] = await datastore.runQuery(datastore.createQuery(namespace, kind));
      for (const entity of entities as Array<{ lock_state?: string; [key: symbol]: unknown }>) {
        if (entity.lock_state === 'scheduled') left.push(keyPath(entity[Datastore.KEY] as Key));
      }
    }
    assert.ok(left.length >= 1, 'the kill left at least one chain unfinished');

    const second = await startExample({ ...env, EXAMPLE_AUTOSTART: '0' });
    running.push(second);
    const listed = await fetchStatus(second.url) as Awaited<ReturnType<typeof fetchStatus>> & { unfinishedAtStart: string[] };
    assert.deepEqual([...listed.unfinishedAtStart].sort(), [...left].sort(), '/status.json lists the chains found unfinished');
    assert.match(second.stdout(), new RegExp(`found ${left.length} unfinished chain\\(s\\) from an earlier run`));
    for (const key of left) assert.ok(second.stdout().includes(`  ${key} at step `), `the restart names ${key}`);

    const done = await waitFor('every chain to complete after the restart', async () => {
      const { chains } = await fetchStatus(second.url);
      return chains.length > 0 && chains.every((c) => c.state === 'complete') ? chains : undefined;
    }, 60_000);
    for (const chain of done) {
      const expected = chain.kind === 'Counter' ? 10 : 3;
      assert.equal(chain.steps.length, expected, `${chain.key} ran every step`);
      // a step killed inside its handler may run twice (its lease was taken over, and alerted); none more
      for (const step of chain.steps) assert.ok(step.runs === 1 || step.runs === 2, `${chain.key} step ${step.seq} ran ${step.runs} times`);
    }
    // a sweep by hand, as the README documents it
    const swept = await fetch(`${second.url}/local/sweep`, { method: 'POST' });
    assert.equal(swept.status, 200);
    assert.deepEqual(Object.keys(await swept.json() as object).sort(), ['alerted', 'cleared', 'failed', 'malformed', 'recurring', 'resent', 'waiting']);
    assert.equal(await second.stop(), 0);
  });
});

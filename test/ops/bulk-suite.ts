/**
 * Bulk operations against a real store: run by bulk.*.test.ts on the in-memory store and on both
 * Datastore emulators. Chains run through the local dispatcher (real HTTP), the operation's pages
 * too, on the status router's task route; the sweep runs on a timer (`support/bulk-rig.ts`).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import request from 'supertest';
import type { Key } from '@google-cloud/datastore';
import { keys } from '../support/task-app';
import { bulkRig, countKeysIn, OPERATOR, pathsOf, type BulkRig } from '../support/bulk-rig';
import { BadRequestError } from '../../src/errors/errors';
import { operationKey } from '../../src/ops/bulk/operation';
import type { StoreUnderTest } from '../step/handle-suite';

const KIND = 'BulkOrder';
let counter = 0;

export function bulkSuite(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`bulk operations on ${name}`, () => {
    let s: StoreUnderTest;
    let rig: BulkRig;
    before(async () => {
      s = await open();
      rig = await bulkRig(s.store, { kind: KIND, namespace: s.namespace });
    });
    after(async () => {
      await rig.close();
      await s.close?.();
    });
    const ns = (): string | undefined => s.namespace;
    const newKeys = (prefix: string, n: number): Key[] => {
      counter += 1;
      return Array.from({ length: n }, (_, i) => keys.key({ namespace: s.namespace, path: [KIND, `${prefix}${counter}-${i}`] }));
    };
    /** Starts a chain on each key that fails for good (by one kickoff, if named), and waits until every one failed. */
    const failedChains = async (all: Key[], kickoffId?: string): Promise<void> => {
      const paths = pathsOf(all);
      for (const p of paths) rig.failing.add(p);
      // A call that met a loaded emulator's deadline is made again with the same kickoff id, as the
      // bulk-kickoff guide says: it starts no chain twice.
      const id = kickoffId ?? `seed-${counter}-${all.length}`;
      let result = await rig.locker.scheduleMany(all.map((key) => ({ key, entity: { total: 5 }, path: '/work' })), { kickoffId: id });
      for (let again = 0; again < 3 && result.started < all.length; again++) {
        result = await rig.locker.scheduleMany(all.map((key) => ({ key, entity: { total: 5 }, path: '/work' })), { kickoffId: id });
      }
      const errors = result.results.flatMap((r) => (r.status === 'failed' ? [r.error.message] : [])).slice(0, 3);
      assert.equal(result.started, all.length, `every chain started: ${errors.join('; ')}`);
      await rig.until(`${all.length} chains failed`, async () => (await countKeysIn(s.store, all, 'failed')) === all.length, 120_000);
      for (const p of paths) rig.failing.delete(p);
    };

    it('a bulk retry of 150 failed chains runs each once and the operation reaches done 150, with its audit lines', { timeout: 300_000 }, async () => {
      const all = newKeys('retry', 150);
      await failedChains(all);
      const started = await rig.locker.bulk('retry', { kind: KIND, ...(ns() ? { namespace: ns() } : {}) }, { mount: '/ops', id: `retry-${counter}-150`, by: 'script' });
      assert.equal(started.created, true);
      assert.deepEqual([started.operation.matched, started.operation.matchedExact, started.operation.state], [150, true, 'running']);
      const op = await rig.operationDone(started.operation.id, ns());
      assert.deepEqual({ done: op.done, skipped: op.skipped, failed: op.failed, pages: op.pages, matched: op.matched }, { done: 150, skipped: 0, failed: 0, pages: 2, matched: 150 });
      await rig.until('150 chains complete', async () => (await countKeysIn(s.store, all, 'complete')) === all.length, 120_000);
      for (const p of pathsOf(all)) assert.equal(rig.runs.get(p), 2, `${p}: its failed run, then the retried one, once`);
      const audit = rig.logger.lines.filter((l) => l.fields?.operation === started.operation.id && l.message.startsWith('bulk operation'));
      assert.deepEqual(audit.map((l) => [l.level, l.message]), [['info', 'bulk operation started'], ['info', 'bulk operation done']]);
      assert.equal(audit[0]!.fields!.by, 'script');
      assert.equal(audit[0]!.fields!.matched, 150);
      assert.match(String(audit[0]!.fields!.what), new RegExp(`retry every failed ${KIND} chain`));
      assert.deepEqual([audit[1]!.fields!.done, audit[1]!.fields!.skipped, audit[1]!.fields!.failed], [150, 0, 0]);
      const again = await rig.locker.bulk('retry', { kind: KIND, ...(ns() ? { namespace: ns() } : {}) }, { mount: '/ops', id: started.operation.id });
      assert.equal(again.created, false, 'the same id starts nothing');
      assert.equal(again.operation.done, 150);
    });

    it('a confirmation posted twice starts one operation; the page shows the count first and its progress after', { timeout: 300_000 }, async () => {
      const all = newKeys('twice', 20);
      await failedChains(all);
      const query = `action=retry&kind=${KIND}${ns() ? `&namespace=${encodeURIComponent(ns()!)}` : ''}`;
      const confirm = await request(rig.app).get(`/ops/bulk?${query}`).set('authorization', OPERATOR.token);
      assert.equal(confirm.status, 200);
      assert.match(confirm.text, /<strong>20<\/strong> failed chains match now/);
      const id = /name="id" value="([A-Za-z0-9_-]+)"/.exec(confirm.text)?.[1];
      const csrf = /name="csrf" value="([A-Za-z0-9_-]+)"/.exec(confirm.text)?.[1];
      const cookie = String(confirm.headers['set-cookie']).split(';')[0]!;
      assert.ok(id && csrf, 'the form carries an operation id and the CSRF token');
      const form = { action: 'retry', kind: KIND, ...(ns() ? { namespace: ns() } : {}), id, csrf };
      const post = () => request(rig.app).post('/ops/bulk').set('authorization', OPERATOR.token).set('cookie', cookie).type('form').send(form);
      const [first, second] = await Promise.all([post(), post()]);
      for (const res of [first, second]) {
        assert.equal(res.status, 303, res.text);
        assert.equal(res.headers.location, `/ops/operation?id=${id}${ns() ? `&namespace=${encodeURIComponent(ns()!)}` : ''}`);
      }
      const third = await post();
      assert.equal(third.status, 303, 'a retried POST is answered with the same operation');
      const op = await rig.operationDone(id, ns());
      assert.deepEqual([op.done, op.skipped, op.failed, op.by], [20, 0, 0, OPERATOR.principal]);
      await rig.until('20 chains complete', async () => (await countKeysIn(s.store, all, 'complete')) === all.length, 120_000);
      for (const p of pathsOf(all)) assert.equal(rig.runs.get(p), 2, `${p} was retried once`);
      assert.equal(rig.logger.lines.filter((l) => l.message === 'bulk operation started' && l.fields?.operation === id).length, 1, 'one operation started');
      const page = await request(rig.app).get(first.headers.location as string).set('authorization', OPERATOR.token);
      assert.equal(page.status, 200);
      assert.match(page.text, /20 of 20: 20 done, 0 skipped, 0 failed/);
      assert.match(page.text, new RegExp(OPERATOR.principal.replace('.', '\\.')));
      const listed = await request(rig.app).get('/ops/operations.json').set('authorization', OPERATOR.token);
      assert.equal(listed.status, 200);
      const mine = (listed.body as { operations: Array<{ id: string; done: number; chain: string }> }).operations.filter((o) => o.id === id);
      assert.deepEqual(mine.map((o) => [o.done, o.chain]), [[20, 'done']]);
    });

    it('a bulk retry of a kickoff\'s failed chains retries those alone', { timeout: 300_000 }, async () => {
      const mine = newKeys('kick-a', 20);
      const others = newKeys('kick-b', 10);
      await failedChains(mine, `kick-a-${counter}`);
      await failedChains(others, `kick-b-${counter}`);
      const started = await rig.locker.bulk('retry', { kind: KIND, ...(ns() ? { namespace: ns() } : {}), kickoff: `kick-a-${counter}` }, { mount: '/ops', id: `kick-retry-${counter}` });
      assert.deepEqual([started.operation.matched, started.operation.matchedExact], [20, true]);
      const op = await rig.operationDone(started.operation.id, ns());
      assert.deepEqual([op.done, op.skipped, op.failed], [20, 0, 0]);
      await rig.until('20 chains complete', async () => (await countKeysIn(s.store, mine, 'complete')) === mine.length, 120_000);
      assert.equal(await countKeysIn(s.store, others, 'failed'), others.length, 'the other kickoff\'s chains are left failed');
      for (const p of pathsOf(others)) assert.equal(rig.runs.get(p), 1);
    });

    it('refuses a bad filter before writing anything', async () => {
      const id = `bad-filter-${++counter}`;
      await assert.rejects(rig.locker.bulk('retry', {}, { mount: '/ops', id }), BadRequestError);
      await assert.rejects(rig.locker.bulk('cancel', { kind: KIND }, { mount: '/ops', id }), /needs a kickoff/);
      await assert.rejects(rig.locker.bulk('explode' as never, { kind: KIND }, { mount: '/ops', id }), BadRequestError);
      await assert.rejects(rig.locker.bulk('retry', { kind: KIND, fanOut: 'nope' }, { mount: '/ops', id }), BadRequestError);
      await assert.rejects(rig.locker.bulk('retry', { kind: KIND }, { mount: 'ops', id }), TypeError);
      for (const namespace of [undefined, ns()]) assert.equal(await s.store.get(operationKey(id, namespace)), undefined, 'no record');
    });
  });
}

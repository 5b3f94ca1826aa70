/**
 * Unknown options: every options object the library takes rejects a key it does not know with a
 * ConfigError naming the key and the closest known option, so a misspelling never passes as a
 * default.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '@google-cloud/tasks';
import express from 'express';
import request from 'supertest';
import { ConfigError, ERRORS_REFERENCE_URL } from '../../src/errors/errors';
import { Locker } from '../../src/locker';
import { closest, editDistance } from '../../src/config/option-names';
import { LocalQueue } from '../../src/queue/local';
import { CloudTasksQueue } from '../../src/queue/cloud-tasks';
import { EmailAlerter } from '../../src/alert/email';
import { RateLimiter } from '../../src/alert/rate-limit';
import { oidcAuthenticator } from '../../src/auth/oidc';
import { appEngineAuthenticator } from '../../src/auth/app-engine';
import { MemoryStore } from '../../src/store/memory/store';
import { DatastoreStore } from '../../src/store/datastore/store';
import { withContentionRetry } from '../../src/locks/retry';
import { platformLogger } from '../../src/log/platform-logger';
import type { Properties } from '../../src/types';

const datastore = new Datastore({ projectId: 'locker-test' });
const tasksClient = new CloudTasksClient();
after(() => tasksClient.close());

/** Asserts that `build` throws a ConfigError naming `unknown` and suggesting `suggested`. */
function rejects(build: () => unknown, owner: string, unknown: string, suggested: string): void {
  assert.throws(build, (error: unknown) => {
    assert.ok(error instanceof ConfigError, `a ConfigError, got ${String(error)}`);
    assert.ok(error.message.includes(owner), `the message names ${owner}: ${error.message}`);
    assert.ok(error.message.includes(`unknown option \`${unknown}\``), `the message names the unknown key: ${error.message}`);
    assert.ok(error.message.includes(`did you mean \`${suggested}\`?`), `the message suggests ${suggested}: ${error.message}`);
    return true;
  });
}

const noAuth = { store: new MemoryStore(), authenticate: false as const };
const factory = (props: Properties) => props;

describe('unknown options', () => {
  describe('new Locker()', () => {
    it('rejects a misspelt top-level option, naming the closest known one', () => {
      rejects(() => new Locker({ ...noAuth, leaseDuraton: 5_000 } as never), 'Locker', 'leaseDuraton', 'leaseDuration');
      rejects(() => new Locker({ ...noAuth, maxRetry: 3 } as never), 'Locker', 'maxRetry', 'maxRetries');
      rejects(() => new Locker({ ...noAuth, leaseduration: 5_000 } as never), 'Locker', 'leaseduration', 'leaseDuration');
    });

    it('rejects an unknown key even when its value is undefined', () => {
      rejects(() => new Locker({ ...noAuth, alertTimout: undefined } as never), 'Locker', 'alertTimout', 'alertTimeout');
    });

    it('rejects misspelt nested options of contention and duplicateCache', () => {
      rejects(() => new Locker({ ...noAuth, contention: { attempt: 3 } } as never), 'Locker', 'contention.attempt', 'contention.attempts');
      rejects(() => new Locker({ ...noAuth, duplicateCache: { ttl: 5 } } as never), 'Locker', 'duplicateCache.ttl', 'duplicateCache.ttlMs');
    });

    it('lists the known options when nothing is close', () => {
      assert.throws(() => new Locker({ ...noAuth, xyzzyFrobnicate: 1 } as never), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /unknown option `xyzzyFrobnicate`; did you mean `\w+`\? Known options: store, queue, alerter, .*duplicateCache, telemetry, scheduleNamespace\. \(/);
        assert.ok(error.message.endsWith(`(${ERRORS_REFERENCE_URL}#configerror)`), 'the message links to the error\'s entry');
        return true;
      });
    });

    it('accepts every documented option', () => {
      const locker = new Locker({
        store: new MemoryStore(), queue: undefined, alerter: () => undefined, alertOnOverwrite: true, alertOnFailure: true,
        alertTimeout: 300, leaseDuration: 1000, leaseTimeout: 2000, requestTimeout: 3000, maxRetries: 2, lockFailedStatus: 503, authenticate: false,
        logger: console, clock: Date.now, contention: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }, keyAppId: 's~x',
        excludeFromIndexes: [], stallAfter: 1000, duplicateCache: { size: 1, ttlMs: 1 }, telemetry: false,
      });
      assert.equal(locker.config.leaseDuration, 1000);
      assert.equal(locker.config.telemetry, false);
    });
  });

  describe("the Locker's methods", () => {
    it('handle() rejects a misspelt route option', () => {
      const locker = new Locker(noAuth);
      rejects(() => locker.handle(() => undefined, factory, { kind: ['Counter'] } as never), 'handle()', 'kind', 'kinds');
      rejects(() => locker.handle(() => undefined, factory, { maxBodySize: 10 } as never), 'handle()', 'maxBodySize', 'maxBodyBytes');
    });

    it('sweepHandler() rejects a misspelt option', () => {
      const locker = new Locker(noAuth);
      rejects(() => locker.sweepHandler({ authenticator: false } as never), 'sweepHandler()', 'authenticator', 'authenticate');
    });

    it('schedule() rejects a misspelt step option before anything is written', async () => {
      const store = new MemoryStore();
      const queue = new LocalQueue({ baseUrl: 'http://127.0.0.1:9' });
      try {
        const locker = new Locker({ store, queue, authenticate: false });
        const key = datastore.key(['Counter', 'unknown-option']);
        await assert.rejects(locker.schedule(key, {}, '/task', undefined, { delay: 5 } as never), (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, /schedule\(\): unknown option `delay`; did you mean `delayMs`\?/);
          return true;
        });
        assert.equal(await store.get(key), undefined, 'nothing was written');
      } finally {
        await queue.shutdown();
      }
    });

    it("ctx.schedule() rejects a misspelt step option; the step's handler fails", async () => {
      const store = new MemoryStore();
      const queue = new LocalQueue({ baseUrl: 'http://127.0.0.1:9' });
      try {
        const locker = new Locker({ store, queue, authenticate: false, logger: { info() {}, warn() {}, error() {} } });
        const errors: unknown[] = [];
        const app = express();
        app.post('/task', locker.handle(async (ctx) => {
          try {
            await ctx.schedule('/task', undefined, { at_: new Date() } as never);
          } catch (error) {
            errors.push(error);
            throw error;
          }
        }, factory));
        const key = datastore.key(['Counter', 'ctx-unknown-option']);
        await store.transaction(async (tx) => tx.put(key, { lock_seq: 1, lock_req: '', lock_try: 0, lock_ts: new Date(), lock_state: 'scheduled' }, []));
        const res = await request(app).post('/task').set('X-Lock-Key', locker.encodeKey(key)).set('X-Lock-Seq', '1').send();
        assert.equal(res.status, 500);
        assert.equal(errors.length, 1);
        assert.ok(errors[0] instanceof ConfigError);
        assert.match((errors[0] as Error).message, /unknown option `at_`; did you mean `at`\?/);
      } finally {
        await queue.shutdown();
      }
    });
  });

  describe('the parts', () => {
    it('LocalQueue', () => {
      rejects(() => new LocalQueue({ baseUrl: 'http://127.0.0.1:9', concurency: 2 } as never), 'LocalQueue', 'concurency', 'concurrency');
      rejects(() => new LocalQueue({ baseUrl: 'http://127.0.0.1:9', secretKey: 'x'.repeat(32) } as never), 'LocalQueue', 'secretKey', 'secret');
    });

    const cloudTasks = { client: tasksClient, project: 'p', location: 'europe-west1', queue: 'steps' };
    it('CloudTasksQueue, its targets and their OIDC options', () => {
      const http = { type: 'http' as const, url: 'https://app.example.com' };
      rejects(() => new CloudTasksQueue({ ...cloudTasks, target: http, createAttempt: 2 } as never), 'CloudTasksQueue', 'createAttempt', 'createAttempts');
      rejects(() => new CloudTasksQueue({ ...cloudTasks, target: { ...http, oidcToken: {} } } as never), 'CloudTasksQueue', 'target.oidcToken', 'target.oidc');
      rejects(
        () => new CloudTasksQueue({ ...cloudTasks, target: { ...http, oidc: { serviceAccount: 'a@b.c' } } } as never),
        'CloudTasksQueue', 'target.oidc.serviceAccount', 'target.oidc.serviceAccountEmail',
      );
      rejects(() => new CloudTasksQueue({ ...cloudTasks, target: { type: 'appengine', services: 'x' } } as never), 'CloudTasksQueue', 'target.services', 'target.service');
    });

    it('EmailAlerter and its rate limit', () => {
      const email = { transport: { jsonTransport: true }, to: 'ops@example.com', from: 'locker@example.com' };
      rejects(() => new EmailAlerter({ ...email, subject_prefix: '[x]' } as never), 'EmailAlerter', 'subject_prefix', 'subjectPrefix');
      rejects(() => new EmailAlerter({ ...email, rateLimit: { max: 1, per: 1000 } } as never), 'rate limit', 'per', 'perMs');
      rejects(() => new RateLimiter({ max: 1, perMs: 1, maximum: 2 } as never), 'rate limit', 'maximum', 'max');
    });

    it('oidcAuthenticator and appEngineAuthenticator', () => {
      const oidc = { audience: 'https://app.example.com', serviceAccountEmail: 'tasks@p.iam.gserviceaccount.com' };
      rejects(() => oidcAuthenticator({ ...oidc, issuer: ['https://accounts.google.com'] } as never), 'oidcAuthenticator', 'issuer', 'issuers');
      rejects(() => appEngineAuthenticator({ queue: ['steps'] } as never), 'appEngineAuthenticator', 'queue', 'queues');
    });

    it('MemoryStore and DatastoreStore', () => {
      rejects(() => new MemoryStore({ projectID: 'p' } as never), 'MemoryStore', 'projectID', 'projectId');
      rejects(() => new DatastoreStore(datastore, { conditionalWrite: false } as never), 'DatastoreStore', 'conditionalWrite', 'conditionalWrites');
    });

    it('platformLogger', () => {
      rejects(() => platformLogger({ fromat: 'json' } as never), 'platformLogger', 'fromat', 'format');
    });

    it('locker.cancel()', async () => {
      const locker = new Locker(noAuth);
      await assert.rejects(locker.cancel(datastore.key(['Counter', 'c']), { sequence: 2 } as never), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /locker\.cancel\(\): unknown option `sequence`; did you mean `seq`\?/);
        return true;
      });
    });

    it('withContentionRetry', async () => {
      await assert.rejects(withContentionRetry(async () => 1, { attemps: 2 } as never), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /withContentionRetry: unknown option `attemps`; did you mean `attempts`\?/);
        return true;
      });
    });
  });
});

describe('the closest known option', () => {
  it('counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    assert.equal(editDistance('', ''), 0);
    assert.equal(editDistance('abc', ''), 3);
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(editDistance('leaseDuraiton', 'leaseDuration'), 1);
    assert.equal(editDistance('ttl', 'ttlMs'), 2);
  });

  it('ignores case first and counts it only to break ties', () => {
    assert.deepEqual(closest('LEASEDURATION', ['leaseTimeout', 'leaseDuration']), { best: 'leaseDuration', distance: 0 });
    assert.equal(closest('Ab', ['aB', 'Ab']).best, 'Ab');
  });
});

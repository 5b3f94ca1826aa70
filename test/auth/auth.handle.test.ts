// Authentication in handle(): OIDC tokens as Cloud Tasks attaches them (signed by a key made in
// the test and served as certificates on loopback), and the App Engine queue header. Refused
// requests never reach the store.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import request from 'supertest';
import type { Key } from '@google-cloud/datastore';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { oidcAuthenticator } from '../../src/auth/oidc';
import { appEngineAuthenticator } from '../../src/auth/app-engine';
import { StepState, type Authenticator, type Properties, type Snapshot, type Store, type StoreTransaction } from '../../src/types';
import { generateSigningKey, idTokenClaims, startOidcIssuer, type OidcIssuer } from '../support/oidc-issuer';
import { keys, MemoryLogger } from '../support/task-app';

const AUDIENCE = 'https://worker.example.com/process';
const ACCOUNT = 'tasks@demo-project.iam.gserviceaccount.com';

/** A MemoryStore that counts every read and transaction. */
class CountingStore extends MemoryStore {
  calls = 0;
  override transaction<T>(fn: (tx: StoreTransaction) => Promise<T>): Promise<T> { this.calls++; return super.transaction(fn); }
  override get(key: Key): Promise<Properties | undefined> { this.calls++; return super.get(key); }
  override read(key: Key): Promise<Snapshot | undefined> { this.calls++; return super.read(key); }
  override replaceIfUnchanged(key: Key, snapshot: Snapshot, props: Properties, excludes: readonly string[]): Promise<Snapshot | undefined> {
    this.calls++;
    return super.replaceIfUnchanged(key, snapshot, props, excludes);
  }
}

function appWith(store: Store, authenticate: Authenticator) {
  const runs: number[] = [];
  const logger = new MemoryLogger();
  const locker = new Locker({ store, authenticate, logger });
  const app = express();
  app.post('/process', locker.handle((ctx) => { runs.push(ctx.seq); }, (p) => p));
  return { app, locker, runs, logger };
}

async function seed(store: Store, key: Key): Promise<void> {
  await store.transaction(async (tx) => {
    tx.put(key, { lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled }, []);
  });
}

describe('handle() with OIDC authentication', () => {
  let issuer: OidcIssuer;
  before(async () => { issuer = await startOidcIssuer(); });
  after(async () => { await issuer.close(); });

  const now = () => Math.floor(Date.now() / 1000);
  const cases: Array<[string, () => string, 401 | 403]> = [
    ['an expired token', () => issuer.sign(idTokenClaims({ iat: now() - 7200, exp: now() - 3600 })), 401],
    ['a token for another audience', () => issuer.sign(idTokenClaims({ aud: 'https://elsewhere.example.com' })), 401],
    ['a token of another service account', () => issuer.sign(idTokenClaims({ email: 'intruder@evil.example.com' })), 403],
    ['a tampered token', () => {
      const [h, , s] = issuer.sign(idTokenClaims()).split('.');
      const forged = Buffer.from(JSON.stringify(idTokenClaims({ email: ACCOUNT, admin: true }))).toString('base64url');
      return `${h}.${forged}.${s}`;
    }, 401],
    ['a token signed by another key', () => issuer.sign(idTokenClaims(), { key: generateSigningKey('test-key-1') }), 401],
  ];

  for (const [name, token, status] of cases) {
    it(`refuses ${name} with ${status}, without touching the store`, async () => {
      const store = new CountingStore();
      const key = keys.key(['Job', 'j1']);
      await seed(store, key);
      store.calls = 0;
      const t = appWith(store, oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: ACCOUNT, client: issuer.client() }));
      const res = await request(t.app).post('/process').set('authorization', `Bearer ${token()}`)
        .set('x-lock-key', t.locker.encodeKey(key)).set('x-lock-seq', '1');
      assert.equal(res.status, status);
      assert.equal(store.calls, 0);
      assert.deepEqual(t.runs, []);
      assert.ok(t.logger.has('refused'));
    });
  }

  it('runs the step for a valid token', async () => {
    const store = new CountingStore();
    const key = keys.key(['Job', 'j2']);
    await seed(store, key);
    const t = appWith(store, oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: ACCOUNT, client: issuer.client() }));
    const res = await request(t.app).post('/process').set('authorization', `Bearer ${issuer.sign(idTokenClaims())}`)
      .set('x-lock-key', t.locker.encodeKey(key)).set('x-lock-seq', '1');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(t.runs, [1]);
  });
});

describe('handle() on App Engine', () => {
  it('accepts X-AppEngine-QueueName from an allowed queue and refuses requests without it', async () => {
    const store = new CountingStore();
    const key = keys.key(['Job', 'j3']);
    await seed(store, key);
    store.calls = 0;
    const t = appWith(store, appEngineAuthenticator({ queues: ['steps'], skipPlatformCheck: true }));
    const send = () => request(t.app).post('/process').set('x-lock-key', t.locker.encodeKey(key)).set('x-lock-seq', '1');
    assert.equal((await send()).status, 401);
    assert.equal((await send().set('x-appengine-queuename', 'other')).status, 403);
    assert.equal(store.calls, 0);
    const ok = await send().set('x-appengine-queuename', 'steps').set('x-appengine-taskname', 't-1').set('x-appengine-taskretrycount', '0');
    assert.equal(ok.status, 200);
    assert.deepEqual(t.runs, [1]);
  });
});

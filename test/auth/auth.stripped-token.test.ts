// Tokens whose signature Cloud Run removed: cloudRunIamAuthenticator accepts exactly that form, with
// the claims checked; every other authenticator (oidc, iap, a pluggable client that decodes without
// verifying, anyOf combinations) refuses a forged one. The App Engine authenticators are refused
// off App Engine; IAP's verification messages never reach the reason.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { OAuth2Client, LoginTicket } from 'google-auth-library';
import { cloudRunIamAuthenticator, type CloudRunIamAuthenticatorOptions } from '../../src/auth/cloud-run-iam';
import { oidcAuthenticator, type OidcTokenVerifier } from '../../src/auth/oidc';
import { iapAuthenticator, IAP_HEADER, type IapTokenVerifier } from '../../src/auth/iap';
import { appEngineAuthenticator } from '../../src/auth/app-engine';
import { appEngineCronAuthenticator } from '../../src/auth/app-engine-cron';
import { anyOf } from '../../src/auth/any-of';
import { STRIPPED_SIGNATURE } from '../../src/auth/bearer-jwt';
import { ConfigError } from '../../src/errors/errors';
import type { AuthRequest, AuthVerdict, Logger } from '../../src/types';
import { encode, idTokenClaims, startOidcIssuer, type Claims, type OidcIssuer } from '../support/oidc-issuer';

const AUDIENCE = 'https://orders-abc-ew.a.run.app';
const TASKS = 'tasks@demo-project.iam.gserviceaccount.com';
const SCHEDULER = 'scheduler@demo-project.iam.gserviceaccount.com';
const IAP_AUDIENCE = '/projects/123456/apps/shop-prod';

/** A token as Cloud Run hands it on: header and payload intact, the signature replaced. */
function stripped(claims: Claims, header: Claims = { alg: 'RS256', typ: 'JWT', kid: 'k1' }): string {
  return `${encode(header)}.${encode(claims)}.${STRIPPED_SIGNATURE}`;
}

function bearer(token: string, header = 'authorization'): AuthRequest {
  return { method: 'POST', url: '/tasks/x', headers: { [header]: header === 'authorization' ? `Bearer ${token}` : token } };
}

function refusal(verdict: AuthVerdict): { status: number; reason: string } {
  assert.equal(verdict.ok, false, 'expected a refusal');
  return verdict.ok ? { status: 0, reason: '' } : { status: verdict.status, reason: verdict.reason };
}

/** A logger that keeps its lines. */
function keptLogger(): Logger & { lines: Array<[string, string, Record<string, unknown> | undefined]> } {
  const lines: Array<[string, string, Record<string, unknown> | undefined]> = [];
  return {
    lines,
    info: (m, f) => lines.push(['info', m, f]),
    warn: (m, f) => lines.push(['warn', m, f]),
    error: (m, f) => lines.push(['error', m, f]),
  };
}

/** The shim a user might write: "decode without verifying". Accepts any token with a JSON payload. */
function decodingShim(): OidcTokenVerifier & IapTokenVerifier {
  const decode = async (token: string) => {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    return new LoginTicket('env', payload as never);
  };
  return {
    getFederatedSignonCertsAsync: async () => ({ certs: {}, format: 'PEM' as never, res: null }),
    getIapPublicKeysAsync: async () => ({ pubkeys: {}, res: null }),
    verifySignedJwtWithCertsAsync: decode,
  } as unknown as OidcTokenVerifier & IapTokenVerifier;
}

const ON_CLOUD_RUN = { K_SERVICE: 'orders' };

/** Runs `fn` with `vars` set in process.env (and GAE_APPLICATION, GAE_SERVICE, K_SERVICE unset unless given), then restores it. */
function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const names = ['K_SERVICE', 'GAE_APPLICATION', 'GAE_SERVICE', ...Object.keys(vars)];
  const saved = names.map((n) => [n, process.env[n]] as const);
  for (const n of names) delete process.env[n];
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [n, v] of saved) {
      if (v === undefined) delete process.env[n];
      else process.env[n] = v;
    }
  }
}

function iam(more: Partial<CloudRunIamAuthenticatorOptions> = {}, logger = keptLogger()) {
  return withEnv(ON_CLOUD_RUN, () => cloudRunIamAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, logger, ...more }));
}

describe('cloudRunIamAuthenticator', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const claims = (more: Claims = {}) => idTokenClaims({ aud: AUDIENCE, email: TASKS, ...more });

  it('accepts a stripped token with the right issuer, audience, account and time', async () => {
    assert.deepEqual(await iam()(bearer(stripped(claims()))), { ok: true });
    assert.deepEqual(await iam()(bearer(stripped(claims({ iss: 'accounts.google.com', email: TASKS.toUpperCase() })))), { ok: true });
  });

  it('says at start-up what it trusts and checks', () => {
    const logger = keptLogger();
    iam({ serviceAccountEmail: [TASKS, SCHEDULER] }, logger);
    assert.equal(logger.lines.length, 1);
    const [level, message, fields] = logger.lines[0]!;
    assert.equal(level, 'info');
    assert.match(message, /trusting Cloud Run's IAM front to have verified token signatures and roles\/run\.invoker/);
    assert.match(message, /--no-allow-unauthenticated/);
    assert.deepEqual(fields, { audience: [AUDIENCE], serviceAccounts: [TASKS, SCHEDULER], issuers: ['https://accounts.google.com', 'accounts.google.com'] });
  });

  it('refuses another invoker (403), another audience, issuer, an expired or future token (401)', async () => {
    const check = iam();
    const cases: Array<[Claims, number, RegExp]> = [
      [claims({ email: SCHEDULER }), 403, /scheduler@demo-project\.iam\.gserviceaccount\.com is not an allowed service account/],
      [claims({ email_verified: false }), 403, /not verified/],
      [claims({ email: undefined }), 403, /no email claim/],
      [claims({ aud: 'https://other-service.a.run.app' }), 401, /audience \(aud\) does not match/],
      [claims({ iss: 'https://evil.example' }), 401, /issuer \(iss\) is not allowed/],
      [claims({ iat: now() - 7200, exp: now() - 3600 }), 401, /has expired/],
      [claims({ iat: now() + 3600, exp: now() + 7200 }), 401, /not valid yet/],
      [claims({ exp: undefined }), 401, /no expiration time/],
      [claims({ exp: now() + 7 * 86400 }), 401, /too far in the future/],
    ];
    for (const [c, status, reason] of cases) {
      const r = refusal(await check(bearer(stripped(c))));
      assert.equal(r.status, status, r.reason);
      assert.match(r.reason, reason);
    }
    assert.match(refusal(await check(bearer(stripped(claims(), { alg: 'none' })))).reason, /algorithm is not RS256/);
  });

  it('accepts only the exact literal: a signed, an empty, or an altered signature is refused (401), and the signed case logged once', async () => {
    const logger = keptLogger();
    const check = iam({}, logger);
    logger.lines.length = 0;
    const [h, p] = stripped(claims()).split('.');
    for (const third of ['', 'signature_removed_by_google', `${STRIPPED_SIGNATURE}x`, 'abc.def']) {
      const r = refusal(await check(bearer(`${h}.${p}.${third}`)));
      assert.equal(r.status, 401);
    }
    const signed = refusal(await check(bearer(`${h}.${p}.c2lnbmF0dXJl`)));
    assert.match(signed.reason, /token carries a signature/);
    await check(bearer(`${h}.${p}.c2lnbmF0dXJl`));
    assert.deepEqual(logger.lines.map(([level, m]) => [level, /did not come through|is not in front of this service/.test(m)]), [['error', true]], 'one error line, once');
    assert.equal(refusal(await check({ method: 'POST', url: '/', headers: {} })).status, 401);
    assert.equal(refusal(await check(bearer('not-a-jwt'))).status, 401);
  });

  it('reads the token Cloud Run checked: X-Serverless-Authorization when present, never Authorization then', async () => {
    const check = iam();
    const tasks = stripped(claims());
    const yours = stripped(claims({ email: 'you@example.com' }));
    // You, an invoker, put your own token where Cloud Run checks it, and a forged tasks token in Authorization.
    const r = refusal(await check({ method: 'POST', url: '/', headers: { 'x-serverless-authorization': `Bearer ${yours}`, authorization: `Bearer ${tasks}` } }));
    assert.equal(r.status, 403);
    assert.match(r.reason, /you@example\.com is not an allowed service account/);
    assert.deepEqual(await check({ method: 'POST', url: '/', headers: { 'x-serverless-authorization': `Bearer ${tasks}`, authorization: 'Basic app-level' } }), { ok: true });
  });

  it('is refused at construction off Cloud Run, and on App Engine, unless skipPlatformCheck', () => {
    const build = () => cloudRunIamAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, logger: keptLogger() });
    assert.throws(() => withEnv({}, build), (e: unknown) => e instanceof ConfigError && /not on Cloud Run \(K_SERVICE/.test(e.message));
    assert.throws(() => withEnv({ GAE_APPLICATION: 's~demo', K_SERVICE: 'x' }, build), (e: unknown) => e instanceof ConfigError && /runs on App Engine/.test(e.message));
    assert.doesNotThrow(() => withEnv({}, () => cloudRunIamAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, logger: keptLogger(), skipPlatformCheck: true })));
    assert.throws(() => withEnv(ON_CLOUD_RUN, () => cloudRunIamAuthenticator({ audience: AUDIENCE, serviceAccountEmail: 'tasks' })), ConfigError);
    assert.throws(() => withEnv(ON_CLOUD_RUN, () => cloudRunIamAuthenticator({ audience: [], serviceAccountEmail: TASKS })), ConfigError);
    assert.throws(() => withEnv(ON_CLOUD_RUN, () => cloudRunIamAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, client: {} } as never)), /unknown option `client`/);
  });
});

describe('a forged stripped token is refused by every other authenticator', () => {
  let issuer: OidcIssuer;
  before(async () => { issuer = await startOidcIssuer(); });
  after(async () => { await issuer.close(); });
  const forged = () => stripped(idTokenClaims({ aud: AUDIENCE, email: TASKS }), { alg: 'RS256', typ: 'JWT', kid: issuer.key.kid });

  it('oidcAuthenticator, with the real client and with a client that decodes without verifying', async () => {
    for (const client of [issuer.client(), decodingShim()]) {
      const check = oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, client });
      const r = refusal(await check(bearer(forged())));
      assert.equal(r.status, 401);
      assert.match(r.reason, /signature was removed \(SIGNATURE_REMOVED_BY_GOOGLE\).*use cloudRunIamAuthenticator/);
      const unsigned = forged().replace(STRIPPED_SIGNATURE, '');
      assert.match(refusal(await check(bearer(unsigned))).reason, /unsigned/);
    }
    // The shim itself does accept a signed token: the refusal above is the authenticator's, not the client's.
    const shimmed = oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, client: decodingShim() });
    assert.deepEqual(await shimmed(bearer(forged().replace(STRIPPED_SIGNATURE, 'c2ln'))), { ok: true });
  });

  it('iapAuthenticator, with a client that decodes without verifying', async () => {
    const check = iapAuthenticator({ audience: IAP_AUDIENCE, client: decodingShim() });
    const token = stripped({ iss: 'https://cloud.google.com/iap', aud: IAP_AUDIENCE, email: 'ann@shop.example' }, { alg: 'ES256', kid: 'k' });
    const r = refusal(await check(bearer(token, IAP_HEADER)));
    assert.equal(r.status, 401);
    assert.match(r.reason, /^IAP token signature was removed/);
    assert.deepEqual(await check(bearer(token.replace(STRIPPED_SIGNATURE, 'c2ln'), IAP_HEADER)), { ok: true, principal: 'ann@shop.example' }, 'the shim accepts a signed one, naming its email');
  });

  it('anyOf of verifying authenticators refuses it; anyOf mixing cloudRunIamAuthenticator with another mode is a ConfigError', async () => {
    const oidc = oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS, client: decodingShim() });
    const iap = iapAuthenticator({ audience: IAP_AUDIENCE, client: decodingShim() });
    const r = refusal(await anyOf(oidc, iap)(bearer(forged())));
    assert.equal(r.status, 401);
    const crIam = iam();
    assert.throws(() => anyOf(crIam, oidc), (e: unknown) => e instanceof ConfigError && /cannot be combined/.test(e.message));
    assert.throws(() => anyOf(anyOf(oidc), crIam), ConfigError, 'also through a nested anyOf');
    assert.throws(() => anyOf(crIam, appEngineAuthenticator({ skipPlatformCheck: true })), ConfigError);
    assert.deepEqual(await anyOf(crIam, () => ({ ok: false, status: 401, reason: 'x' }))(bearer(stripped(idTokenClaims({ aud: AUDIENCE, email: TASKS })))), { ok: true },
      'with an authenticator of its own kind (e.g. a secret check), it still works');
  });
});

describe('App Engine authenticators off App Engine', () => {
  it('are refused at construction on Cloud Run and elsewhere, built on App Engine or with skipPlatformCheck', async () => {
    for (const env of [{}, ON_CLOUD_RUN]) {
      assert.throws(() => withEnv(env, () => appEngineAuthenticator()), (e: unknown) => e instanceof ConfigError && /appEngineAuthenticator trusts App Engine's front/.test(e.message));
      assert.throws(() => withEnv(env, () => appEngineCronAuthenticator()), (e: unknown) => e instanceof ConfigError && /appEngineCronAuthenticator trusts App Engine's front/.test(e.message));
    }
    const onGae = withEnv({ GAE_APPLICATION: 's~demo', GAE_SERVICE: 'default' }, () => [appEngineAuthenticator(), appEngineCronAuthenticator()] as const);
    assert.deepEqual(await onGae[0]({ method: 'POST', url: '/', headers: { 'x-appengine-queuename': 'default' } }), { ok: true });
    assert.deepEqual(await onGae[1]({ method: 'GET', url: '/', headers: { 'x-appengine-cron': 'true' } }), { ok: true });
    assert.throws(() => appEngineCronAuthenticator({ skipPlatformCheck: 'yes' } as never), ConfigError);
    assert.throws(() => appEngineCronAuthenticator({ skipPlatfromCheck: true } as never), /unknown option/);
  });

  it('on Cloud Run, anyOf(appEngineAuthenticator(), oidc) cannot be built, so X-AppEngine-QueueName alone opens nothing', () => {
    assert.throws(() => withEnv(ON_CLOUD_RUN, () => anyOf(appEngineAuthenticator(), oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: TASKS }))), ConfigError);
  });
});

describe('iapAuthenticator reasons', () => {
  it('never quote the token: google-auth-library messages are mapped', async () => {
    const payload = { iss: 'https://cloud.google.com/iap', aud: '/projects/999/apps/other', email: 'ann@shop.example', secret: 'PAYLOAD-MARKER' };
    const token = `${encode({ alg: 'ES256', kid: 'HEADER-MARKER' })}.${encode(payload)}.c2ln`;
    const real = new OAuth2Client();
    const reasons: string[] = [];
    for (const verify of [
      () => { throw new Error(`Wrong recipient, payload audience != requiredAudience: ${JSON.stringify(payload)}`); },
      () => { throw new Error(`Invalid token signature: ${token}`); },
      () => { throw new Error(`something new: ${token}`); },
      real.verifySignedJwtWithCertsAsync.bind(real),
    ]) {
      const client = { getIapPublicKeysAsync: async () => ({ pubkeys: {}, res: null }), verifySignedJwtWithCertsAsync: verify } as unknown as IapTokenVerifier;
      const r = refusal(await iapAuthenticator({ audience: IAP_AUDIENCE, client })(bearer(token, IAP_HEADER)));
      assert.equal(r.status, 401);
      reasons.push(r.reason);
    }
    for (const reason of reasons) assert.doesNotMatch(reason, /MARKER|eyJ/, reason);
    assert.deepEqual(reasons.slice(0, 3), [
      'IAP token does not verify: audience (aud) does not match',
      'IAP token does not verify: signature is invalid',
      'IAP token does not verify: failed verification',
    ]);
  });
});

// iapAuthenticator: tokens signed here with an ES256 key (as IAP signs), verified by
// google-auth-library's own OAuth2Client against that key as IAP's published key set.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { OAuth2Client } from 'google-auth-library';
import { iapAuthenticator, IAP_HEADER, type IapTokenVerifier } from '../../src/auth/iap';
import { ConfigError } from '../../src/errors/errors';
import type { AuthVerdict } from '../../src/types';

const AUDIENCE = '/projects/123456/apps/shop-prod';
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });

function token(claims: Record<string, unknown>, key: KeyObject = privateKey, kid = 'iap-key-1'): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = part({ alg: 'ES256', typ: 'JWT', kid });
  const body = part({ iss: 'https://cloud.google.com/iap', aud: AUDIENCE, iat: now, exp: now + 600, sub: 'accounts.google.com:1', email: 'ann@shop.example', ...claims });
  const signature = sign('sha256', Buffer.from(`${head}.${body}`), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return `${head}.${body}.${signature}`;
}

/** A real OAuth2Client whose IAP key set is the test's key. */
function client(): IapTokenVerifier {
  const real = new OAuth2Client();
  return {
    getIapPublicKeysAsync: async () => ({ pubkeys: { 'iap-key-1': publicKey.export({ type: 'spki', format: 'pem' }).toString() }, res: null }),
    verifySignedJwtWithCertsAsync: real.verifySignedJwtWithCertsAsync.bind(real),
  } as IapTokenVerifier;
}

const check = (jwt: string | undefined, allow?: Parameters<typeof iapAuthenticator>[0]['allow']): Promise<AuthVerdict> =>
  Promise.resolve(iapAuthenticator({ audience: AUDIENCE, client: client(), ...(allow ? { allow } : {}) })({ method: 'GET', url: '/', headers: jwt ? { [IAP_HEADER]: jwt } : {} }));

describe('iapAuthenticator', () => {
  it('accepts a token IAP signed for this audience', async () => {
    assert.deepEqual(await check(token({})), { ok: true, principal: 'ann@shop.example' }, 'the email is the principal (the audit line of a bulk action says who)');
  });

  it('answers 401 without the header, or for a token that does not verify', async () => {
    const refused = async (jwt: string | undefined, reason: RegExp) => {
      const verdict = await check(jwt);
      assert.equal(verdict.ok, false);
      assert.equal(!verdict.ok && verdict.status, 401);
      assert.match(!verdict.ok ? verdict.reason : '', reason);
    };
    await refused(undefined, /did not come through Identity-Aware Proxy/);
    await refused(token({}, other.privateKey), /does not verify/);
    await refused(token({ aud: '/projects/999/apps/other' }), /does not verify/);
    await refused(token({ iss: 'https://accounts.google.com' }), /does not verify/);
    await refused(token({ exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 4000 }), /does not verify/);
    await refused('not.a.token', /does not verify/);
  });

  it('answers 403 for an email the allow list leaves out', async () => {
    assert.deepEqual(await check(token({}), ['@shop.example']), { ok: true, principal: 'ann@shop.example' });
    assert.deepEqual(await check(token({ email: 'Ann@Shop.Example' }), ['ann@shop.example']), { ok: true, principal: 'Ann@Shop.Example' });
    const verdict = await check(token({ email: 'eve@elsewhere.example' }), ['@shop.example']);
    assert.deepEqual(verdict, { ok: false, status: 403, reason: 'eve@elsewhere.example is not allowed' });
    assert.equal((await check(token({}), (email) => email.startsWith('bob'))).ok, false);
  });

  it('refuses bad options with a sentence', () => {
    assert.throws(() => iapAuthenticator({ audience: 'shop-prod' }), ConfigError);
    assert.throws(() => iapAuthenticator({ audience: AUDIENCE, allow: [] }), ConfigError);
    assert.throws(() => iapAuthenticator({ audience: AUDIENCE, alow: ['x'] } as unknown as Parameters<typeof iapAuthenticator>[0]), /did you mean `allow`/);
  });
});

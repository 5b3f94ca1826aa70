import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { OAuth2Client } from 'google-auth-library';
import { oidcAuthenticator, type OidcAuthenticatorOptions } from '../../src/auth/oidc';
import { ConfigError } from '../../src/errors/errors';
import type { AuthRequest, AuthVerdict, Authenticator } from '../../src/types';
import {
  encode,
  generateSigningKey,
  idTokenClaims,
  startOidcIssuer,
  type Claims,
  type OidcIssuer,
} from '../support/oidc-issuer';

const AUDIENCE = 'https://worker.example.com/process';
const ACCOUNT = 'tasks@demo-project.iam.gserviceaccount.com';

function request(authorization?: string): AuthRequest {
  return { method: 'POST', url: '/process', headers: authorization === undefined ? {} : { authorization } };
}

function bearer(token: string): AuthRequest {
  return request(`Bearer ${token}`);
}

/** Asserts a refusal with the status, and a reason matching `reason`. */
function assertRefused(verdict: AuthVerdict, status: 401 | 403, reason: RegExp): void {
  assert.equal(verdict.ok, false, 'expected a refusal');
  if (verdict.ok) return;
  assert.equal(verdict.status, status, `status for reason "${verdict.reason}"`);
  assert.match(verdict.reason, reason);
}

describe('oidcAuthenticator', () => {
  let issuer: OidcIssuer;
  let authenticate: Authenticator;
  const now = () => Math.floor(Date.now() / 1000);
  const token = (overrides: Claims = {}) => issuer.sign(idTokenClaims(overrides));
  const options = (more: Partial<OidcAuthenticatorOptions> = {}): OidcAuthenticatorOptions => ({
    audience: AUDIENCE,
    serviceAccountEmail: ACCOUNT,
    client: issuer.client(),
    ...more,
  });

  before(async () => {
    issuer = await startOidcIssuer();
    authenticate = oidcAuthenticator(options());
  });
  after(async () => {
    await issuer.close();
  });

  describe('accepts', () => {
    it('a valid token from the configured service account, with certificates fetched from loopback only', async () => {
      const client = issuer.client();
      const before = issuer.requests.length;
      const verdict = await oidcAuthenticator(options({ client }))(bearer(token()));
      assert.deepEqual(verdict, { ok: true });
      assert.deepEqual(issuer.requests.slice(before), ['/oauth2/v1/certs']);
    });

    it('fetches the certificates once while they are fresh (Cache-Control max-age)', async () => {
      const fresh = oidcAuthenticator(options());
      const before = issuer.requests.length;
      assert.deepEqual(await fresh(bearer(token())), { ok: true });
      assert.deepEqual(await fresh(bearer(token())), { ok: true });
      assert.equal(issuer.requests.length - before, 1);
    });

    it('any of several audiences and service accounts, emails compared case-insensitively', async () => {
      const several = oidcAuthenticator(
        options({
          audience: ['https://other.example.com/', AUDIENCE],
          serviceAccountEmail: ['someone@else.iam.gserviceaccount.com', ACCOUNT.toUpperCase()],
        }),
      );
      assert.deepEqual(await several(bearer(token())), { ok: true });
      assert.deepEqual(await several(bearer(token({ aud: 'https://other.example.com/' }))), { ok: true });
    });

    it('both default issuers', async () => {
      assert.deepEqual(await authenticate(bearer(token({ iss: 'accounts.google.com' }))), { ok: true });
      assert.deepEqual(await authenticate(bearer(token({ iss: 'https://accounts.google.com' }))), { ok: true });
    });

    it('only the configured issuers when `issuers` is given', async () => {
      const custom = oidcAuthenticator(options({ issuers: ['https://issuer.example.com'] }));
      assert.deepEqual(await custom(bearer(token({ iss: 'https://issuer.example.com' }))), { ok: true });
      assertRefused(await custom(bearer(token())), 401, /issuer \(iss\) is not allowed/);
    });

    it('the scheme in any case', async () => {
      assert.deepEqual(await authenticate(request(`bearer ${token()}`)), { ok: true });
    });
  });

  describe('refuses with 401', () => {
    it('a request without an Authorization header', async () => {
      assertRefused(await authenticate(request()), 401, /missing Authorization header/);
      assertRefused(await authenticate(request('  ')), 401, /missing Authorization header/);
    });

    it('the Basic scheme', async () => {
      assertRefused(await authenticate(request('Basic dXNlcjpwYXNz')), 401, /scheme is not Bearer/);
    });

    it('a Bearer header without a token, or with more than one', async () => {
      assertRefused(await authenticate(request('Bearer')), 401, /Bearer token is missing/);
      assertRefused(await authenticate(request(`Bearer ${token()} extra`)), 401, /malformed Authorization header/);
    });

    it('a garbage token', async () => {
      assertRefused(await authenticate(bearer('not-a-jwt')), 401, /malformed: not a JWT/);
      assertRefused(await authenticate(bearer('a.b.c.d')), 401, /malformed: not a JWT/);
      assertRefused(await authenticate(bearer('abc.def.ghi')), 401, /malformed: its header is not JSON/);
    });

    it('a token whose payload is not JSON', async () => {
      const [header, , signature] = token().split('.');
      const garbled = `${header}.${Buffer.from('{not json').toString('base64url')}.${signature}`;
      assertRefused(await authenticate(bearer(garbled)), 401, /malformed: its header or payload is not JSON/);
    });

    it('a token with the `none` algorithm', async () => {
      const unsigned = `${encode({ alg: 'none', typ: 'JWT', kid: issuer.key.kid })}.${encode(idTokenClaims())}.`;
      assertRefused(await authenticate(bearer(unsigned)), 401, /algorithm is not RS256/);
    });

    it('a token with another algorithm or without a key id', async () => {
      const hs256 = issuer.sign(idTokenClaims(), { header: { alg: 'HS256' } });
      assertRefused(await authenticate(bearer(hs256)), 401, /algorithm is not RS256/);
      const noKid = issuer.sign(idTokenClaims(), { header: { kid: undefined } });
      assertRefused(await authenticate(bearer(noKid)), 401, /no key id \(kid\)/);
    });

    it('a token whose payload was tampered with (the signature no longer matches)', async () => {
      const [header, , signature] = token({ email: 'intruder@evil.example' }).split('.');
      const tampered = `${header}.${encode(idTokenClaims())}.${signature}`;
      assertRefused(await authenticate(bearer(tampered)), 401, /signature is invalid/);
    });

    it('a token with its signature removed', async () => {
      const [header, payload] = token().split('.');
      assertRefused(await authenticate(bearer(`${header}.${payload}.`)), 401, /^OIDC token is unsigned/);
    });

    it('a token signed by another key under the published key id', async () => {
      const impostor = generateSigningKey(issuer.key.kid);
      assertRefused(await authenticate(bearer(issuer.sign(idTokenClaims(), { key: impostor }))), 401, /signature is invalid/);
    });

    it('a token signed by an unknown key', async () => {
      const stranger = generateSigningKey('unknown-key');
      assertRefused(await authenticate(bearer(issuer.sign(idTokenClaims(), { key: stranger }))), 401, /unknown key/);
    });

    it('an expired token', async () => {
      const expired = token({ iat: now() - 7200, exp: now() - 3600 });
      assertRefused(await authenticate(bearer(expired)), 401, /has expired \(exp\)/);
    });

    it('a token not valid yet, or valid for too long', async () => {
      assertRefused(await authenticate(bearer(token({ iat: now() + 3600, exp: now() + 7200 }))), 401, /not valid yet/);
      assertRefused(await authenticate(bearer(token({ exp: now() + 3 * 86400 }))), 401, /too far in the future/);
    });

    it('a token without an expiration time', async () => {
      assertRefused(await authenticate(bearer(token({ exp: undefined }))), 401, /no expiration time \(exp\)/);
    });

    it('a token for another audience', async () => {
      const other = token({ aud: 'https://attacker.example.com/' });
      assertRefused(await authenticate(bearer(other)), 401, /audience \(aud\) does not match/);
    });

    it('a token from another issuer', async () => {
      const other = token({ iss: 'https://evil.example.com' });
      assertRefused(await authenticate(bearer(other)), 401, /issuer \(iss\) is not allowed/);
    });

    it('when the signing certificates cannot be fetched', async () => {
      const missing = `${issuer.baseUrl}/missing-certs`;
      const client = new OAuth2Client({
        endpoints: { oauth2FederatedSignonPemCertsUrl: missing, oauth2FederatedSignonJwkCertsUrl: missing },
      });
      const verdict = await oidcAuthenticator(options({ client }))(bearer(token()));
      assertRefused(verdict, 401, /certificates could not be fetched/);
      assert.ok(issuer.requests.includes('/missing-certs'));
    });

    it('instead of throwing when something unexpected fails', async () => {
      const headers = new Proxy<IncomingHttpHeaders>(
        {},
        {
          get() {
            throw new TypeError('headers exploded');
          },
        },
      );
      const verdict = await authenticate({ method: 'POST', url: '/process', headers });
      assertRefused(verdict, 401, /unexpected TypeError/);
    });
  });

  describe('refuses with 403', () => {
    it('a valid token of another service account, naming its email', async () => {
      const other = token({ email: 'intruder@other-project.iam.gserviceaccount.com' });
      assertRefused(
        await authenticate(bearer(other)),
        403,
        /intruder@other-project\.iam\.gserviceaccount\.com is not an allowed service account/,
      );
    });

    it('a valid token whose email is not verified', async () => {
      assertRefused(await authenticate(bearer(token({ email_verified: false }))), 403, /is not verified/);
      assertRefused(await authenticate(bearer(token({ email_verified: 'true' }))), 403, /is not verified/);
      assertRefused(await authenticate(bearer(token({ email_verified: undefined }))), 403, /is not verified/);
    });

    it('a valid token without an email', async () => {
      assertRefused(await authenticate(bearer(token({ email: undefined }))), 403, /no email claim/);
    });
  });

  it('never repeats the token or its claims in a reason', async () => {
    const secret = 'do-not-log-this-subject';
    const tokens = [
      token({ sub: secret, exp: now() - 3600, iat: now() - 7200 }),
      token({ sub: secret, aud: 'https://attacker.example.com/' }),
      token({ sub: secret, iss: 'https://evil.example.com' }),
      token({ sub: secret, exp: now() + 3 * 86400 }),
      issuer.sign(idTokenClaims({ sub: secret }), { key: generateSigningKey(issuer.key.kid) }),
    ];
    for (const jwt of tokens) {
      const verdict = await authenticate(bearer(jwt));
      assert.equal(verdict.ok, false);
      if (verdict.ok) continue;
      assert.ok(!verdict.reason.includes(secret), `reason leaks a claim: ${verdict.reason}`);
      assert.ok(!verdict.reason.includes(jwt.split('.')[1]), `reason leaks the token: ${verdict.reason}`);
    }
  });

  describe('options', () => {
    const invalid: [string, () => unknown][] = [
      ['no options', () => oidcAuthenticator(undefined as unknown as OidcAuthenticatorOptions)],
      ['no audience', () => oidcAuthenticator({ serviceAccountEmail: ACCOUNT } as OidcAuthenticatorOptions)],
      ['an empty audience', () => oidcAuthenticator({ audience: '', serviceAccountEmail: ACCOUNT })],
      ['an empty audience list', () => oidcAuthenticator({ audience: [], serviceAccountEmail: ACCOUNT })],
      ['no service account', () => oidcAuthenticator({ audience: AUDIENCE } as OidcAuthenticatorOptions)],
      ['a service account that is not an email', () => oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: 'tasks' })],
      ['an empty issuer list', () => oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: ACCOUNT, issuers: [] })],
      [
        'a client without the verification methods',
        () =>
          oidcAuthenticator({
            audience: AUDIENCE,
            serviceAccountEmail: ACCOUNT,
            client: {} as OidcAuthenticatorOptions['client'],
          }),
      ],
    ];
    for (const [name, build] of invalid) {
      it(`rejects ${name} with a ConfigError`, () => {
        assert.throws(build, (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, /^oidcAuthenticator/);
          return true;
        });
      });
    }

    it('builds its own OAuth2Client when none is given', () => {
      assert.equal(typeof oidcAuthenticator({ audience: AUDIENCE, serviceAccountEmail: ACCOUNT }), 'function');
    });
  });
});

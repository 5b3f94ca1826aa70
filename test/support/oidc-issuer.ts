/**
 * A stand-in for Google's OIDC issuer, on loopback: an RSA key pair made in the test, its public
 * keys served where google-auth-library fetches them (the PEM map of `/oauth2/v1/certs` and the
 * JWK set of `/oauth2/v3/certs`), and a signer for JWTs with any header and claims.
 */
import { generateKeyPairSync, createSign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuth2Client } from 'google-auth-library';

/** A key the issuer may sign with: its id and private half, and the public half it publishes. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** JWT claims; anything JSON. */
export type Claims = Record<string, unknown>;

/** The running issuer. */
export interface OidcIssuer {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** The key the issuer publishes and signs with by default. */
  readonly key: SigningKey;
  /** Paths requested so far, in order. */
  readonly requests: readonly string[];
  /** A JWT signed with RS256 by `key` (or `options.key`), with `options.header` merged into its header. */
  sign(claims: Claims, options?: { key?: SigningKey; header?: Claims }): string;
  /** An OAuth2Client whose every endpoint points at this server, so it can reach nothing else. */
  client(): OAuth2Client;
  close(): Promise<void>;
}

/** Makes an RSA key pair with the given key id. */
export function generateSigningKey(kid: string): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, privateKey, publicKey };
}

/** Encodes a header and claims and signs them with RS256. */
export function signJwt(header: Claims, claims: Claims, privateKey: KeyObject): string {
  const signed = `${encode(header)}.${encode(claims)}`;
  const signature = createSign('RSA-SHA256').update(signed).sign(privateKey).toString('base64url');
  return `${signed}.${signature}`;
}

/** Encodes a JWT segment: JSON in base64url. */
export function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

/**
 * The claims of a Google ID token as Cloud Tasks gets one for a service account, valid for an
 * hour from now; `overrides` replace or add claims.
 */
export function idTokenClaims(overrides: Claims = {}): Claims {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: 'https://accounts.google.com',
    aud: 'https://worker.example.com/process',
    azp: '112233445566778899',
    sub: '112233445566778899',
    email: 'tasks@demo-project.iam.gserviceaccount.com',
    email_verified: true,
    iat: now,
    exp: now + 3600,
    ...overrides,
  };
}

/** Starts the issuer on a free loopback port. */
export async function startOidcIssuer(): Promise<OidcIssuer> {
  const key = generateSigningKey('test-key-1');
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const body = certificates(req.url ?? '', key);
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' });
    res.end(JSON.stringify(body));
  });
  const baseUrl = await listen(server);
  return {
    baseUrl,
    key,
    requests,
    sign: (claims, options = {}) => {
      const signer = options.key ?? key;
      return signJwt({ alg: 'RS256', typ: 'JWT', kid: signer.kid, ...options.header }, claims, signer.privateKey);
    },
    client: () => loopbackClient(baseUrl),
    close: () => stop(server),
  };
}

/** The body served at a path: Google's two certificate formats, or undefined (404). */
function certificates(path: string, key: SigningKey): unknown {
  if (path === '/oauth2/v1/certs') {
    return { [key.kid]: key.publicKey.export({ type: 'spki', format: 'pem' }).toString() };
  }
  if (path === '/oauth2/v3/certs') {
    const jwk = key.publicKey.export({ format: 'jwk' });
    return { keys: [{ ...jwk, kid: key.kid, alg: 'RS256', use: 'sig' }] };
  }
  return undefined;
}

/** An OAuth2Client with every endpoint on the loopback server: it cannot reach Google. */
function loopbackClient(baseUrl: string): OAuth2Client {
  return new OAuth2Client({
    endpoints: {
      tokenInfoUrl: `${baseUrl}/tokeninfo`,
      oauth2AuthBaseUrl: `${baseUrl}/o/oauth2/v2/auth`,
      oauth2TokenUrl: `${baseUrl}/token`,
      oauth2RevokeUrl: `${baseUrl}/revoke`,
      oauth2FederatedSignonPemCertsUrl: `${baseUrl}/oauth2/v1/certs`,
      oauth2FederatedSignonJwkCertsUrl: `${baseUrl}/oauth2/v3/certs`,
      oauth2IapPublicKeyUrl: `${baseUrl}/iap/verify/public_key`,
    },
  });
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve(`http://127.0.0.1:${port}`);
    });
  });
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}

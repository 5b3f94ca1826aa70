/**
 * Authentication of Cloud Tasks HTTP-target requests by the OIDC token Cloud Tasks attaches
 * (`Authorization: Bearer <token>`), verified with google-auth-library.
 */
import { OAuth2Client } from 'google-auth-library';
import type { TokenPayload } from 'google-auth-library';
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { AuthRequest, AuthVerdict, Authenticator } from '../types';
import { markKind } from './authenticator-kind';
import { bearerToken, unsignedProblem } from './bearer-jwt';
import { verificationFailure } from './verification-failure';
import { ACCEPT, refuse } from './verdict';

/**
 * What the authenticator needs from an `OAuth2Client`: Google's certificates and the check of a
 * token against them. Any `OAuth2Client` fits, also one from another copy of google-auth-library.
 */
export type OidcTokenVerifier = Pick<OAuth2Client, 'getFederatedSignonCertsAsync' | 'verifySignedJwtWithCertsAsync'>;

/** Options of {@link oidcAuthenticator}. */
export interface OidcAuthenticatorOptions {
  /**
   * The audience the token must carry: the task's `oidcToken.audience`, or, when the task sets
   * none, the target URL Cloud Tasks sends it to. Several are accepted when given as an array.
   */
  audience: string | readonly string[];
  /**
   * The service account(s) the tasks are created with (`oidcToken.serviceAccountEmail`). The
   * token's `email` must be one of them (compared case-insensitively) and `email_verified` true.
   */
  serviceAccountEmail: string | readonly string[];
  /** Issuers the token may come from. Defaults to `https://accounts.google.com` and `accounts.google.com`. */
  issuers?: readonly string[];
  /**
   * The client that fetches (and caches) Google's signing certificates and verifies tokens.
   * Defaults to a new `OAuth2Client`. Tests and unusual set-ups pass their own, e.g. one whose
   * `endpoints` point elsewhere.
   */
  client?: OidcTokenVerifier;
}

/** The defaults of {@link OidcAuthenticatorOptions}. */
const DEFAULTS = Object.freeze({
  issuers: Object.freeze(['https://accounts.google.com', 'accounts.google.com']),
});

/** Every option name of {@link OidcAuthenticatorOptions}. */
const OPTION_NAMES: OptionNames<OidcAuthenticatorOptions> = { audience: true, serviceAccountEmail: true, issuers: true, client: true };

/** Google signs its ID tokens with RS256; no other algorithm is accepted. */
const ALGORITHM = 'RS256';

/** The parsed, complete configuration. */
interface OidcConfig {
  readonly audience: readonly string[];
  readonly emails: ReadonlySet<string>;
  readonly issuers: readonly string[];
  readonly client: OidcTokenVerifier;
}

/**
 * Builds an authenticator for Cloud Tasks HTTP targets. It answers 401 when the Authorization
 * header is missing or malformed, or the token does not verify (signature, expiry, audience,
 * issuer); 403 when the token is valid but names another service account or an unverified email.
 * The verdict's reason names the failed check. It never throws: an unexpected failure is a 401.
 * @throws ConfigError when the options are invalid.
 */
export function oidcAuthenticator(options: OidcAuthenticatorOptions): Authenticator {
  const config = parseOptions(options);
  return markKind(async (req: AuthRequest): Promise<AuthVerdict> => {
    try {
      return await authenticate(config, req);
    } catch (error) {
      return refuse(401, `OIDC token could not be verified: unexpected ${errorName(error)}`);
    }
  }, 'verifies-signature');
}

/** Checks the options once and fills in the defaults. */
function parseOptions(options: OidcAuthenticatorOptions): OidcConfig {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('oidcAuthenticator needs options with `audience` and `serviceAccountEmail`.');
  }
  rejectUnknownOptions('oidcAuthenticator', options, OPTION_NAMES);
  const audience = nonEmptyList('audience', options.audience);
  const emails = nonEmptyList('serviceAccountEmail', options.serviceAccountEmail);
  const badEmail = emails.find((email) => !email.includes('@'));
  if (badEmail !== undefined) {
    throw new ConfigError(`oidcAuthenticator: serviceAccountEmail "${badEmail}" is not an email address.`);
  }
  const issuers = options.issuers === undefined ? DEFAULTS.issuers : nonEmptyList('issuers', options.issuers);
  return Object.freeze({
    audience: Object.freeze([...audience]),
    emails: new Set(emails.map((email) => email.toLowerCase())),
    issuers: Object.freeze([...issuers]),
    client: options.client === undefined ? new OAuth2Client() : checkClient(options.client),
  });
}

/** A string or an array of strings, none empty, as a list; anything else is a ConfigError. */
function nonEmptyList(name: string, value: unknown): readonly string[] {
  const list: unknown[] = Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every((item) => typeof item === 'string' && item.trim() !== '')) {
    throw new ConfigError(`oidcAuthenticator: \`${name}\` must be a non-empty string or a non-empty array of them.`);
  }
  return list as string[];
}

/** Rejects a client that lacks the two methods the authenticator calls. */
function checkClient(client: OidcTokenVerifier): OidcTokenVerifier {
  const shaped =
    typeof client === 'object' &&
    client !== null &&
    typeof client.getFederatedSignonCertsAsync === 'function' &&
    typeof client.verifySignedJwtWithCertsAsync === 'function';
  if (!shaped) {
    throw new ConfigError(
      'oidcAuthenticator: `client` must be an OAuth2Client (with getFederatedSignonCertsAsync and verifySignedJwtWithCertsAsync).',
    );
  }
  return client;
}

/** Runs every check in order; the first that fails decides the verdict. */
async function authenticate(config: OidcConfig, req: AuthRequest): Promise<AuthVerdict> {
  const token = bearerToken(req.headers.authorization);
  if (typeof token !== 'string') return token;
  const shapeProblem = tokenShapeProblem(token) ?? unsignedProblem(token, 'oidcAuthenticator');
  if (shapeProblem !== undefined) return refuse(401, shapeProblem.startsWith('OIDC') ? shapeProblem : `OIDC ${shapeProblem}`);
  let certs;
  try {
    certs = (await config.client.getFederatedSignonCertsAsync()).certs;
  } catch {
    return refuse(401, "OIDC token could not be verified: Google's signing certificates could not be fetched");
  }
  let payload: TokenPayload | undefined;
  try {
    const ticket = await config.client.verifySignedJwtWithCertsAsync(
      token,
      certs,
      [...config.audience],
      [...config.issuers],
    );
    payload = ticket.getPayload();
  } catch (error) {
    return refuse(401, `OIDC token ${verificationFailure(error)}`);
  }
  return checkIdentity(config, payload);
}

/**
 * Why the token is not a JWT signed with RS256, or undefined when it is one. Checked before the
 * certificates are fetched, so garbage costs nothing and `alg: none` is refused outright. A
 * stripped or empty signature passes this shape check and is refused next, by `unsignedProblem`,
 * before any client (a pluggable one included) is asked to verify it.
 */
function tokenShapeProblem(token: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) {
    return 'OIDC token is malformed: not a JWT';
  }
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8'));
  } catch {
    return 'OIDC token is malformed: its header is not JSON';
  }
  if (typeof header !== 'object' || header === null || !('alg' in header) || header.alg !== ALGORITHM) {
    return `OIDC token algorithm is not ${ALGORITHM}`;
  }
  if (!('kid' in header) || typeof header.kid !== 'string') return 'OIDC token has no key id (kid)';
  return undefined;
}

/** A verified token must name an allowed service account whose email Google verified. */
function checkIdentity(config: OidcConfig, payload: TokenPayload | undefined): AuthVerdict {
  const email = payload?.email;
  if (typeof email !== 'string' || email === '') return refuse(403, 'OIDC token has no email claim');
  if (!config.emails.has(email.toLowerCase())) {
    return refuse(403, `OIDC token email ${email} is not an allowed service account`);
  }
  if (payload?.email_verified !== true) {
    return refuse(403, `OIDC token email ${email} is not verified (email_verified is not true)`);
  }
  return ACCEPT;
}

/** The name of whatever was thrown, never its message (which may quote the token). */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

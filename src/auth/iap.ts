/**
 * Authentication of people behind Identity-Aware Proxy (App Engine, Cloud Run through a load
 * balancer): IAP signs every request it lets through with a JWT in `x-goog-iap-jwt-assertion`
 * (ES256, issuer `https://cloud.google.com/iap`, audience naming the app or backend service),
 * verified here with google-auth-library against IAP's public keys. Meant for the status router.
 */
import { OAuth2Client } from 'google-auth-library';
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { AuthRequest, AuthVerdict, Authenticator } from '../types';
import { markKind } from './authenticator-kind';
import { unsignedProblem } from './bearer-jwt';
import { verificationFailure } from './verification-failure';
import { refuse } from './verdict';

/** What the authenticator needs from an `OAuth2Client`: IAP's keys and the check of a token against them. */
export type IapTokenVerifier = Pick<OAuth2Client, 'getIapPublicKeysAsync' | 'verifySignedJwtWithCertsAsync'>;

/** Options of {@link iapAuthenticator}. */
export interface IapAuthenticatorOptions {
  /**
   * The audience IAP signs for: `/projects/PROJECT_NUMBER/apps/PROJECT_ID` on App Engine,
   * `/projects/PROJECT_NUMBER/global/backendServices/SERVICE_ID` behind a load balancer.
   */
  audience: string;
  /**
   * Who may in, by the token's `email`: exact addresses, `@domain` suffixes, or a function. IAP
   * already admits only the principals its policy names; this narrows further. Defaults to
   * everyone IAP admits.
   */
  allow?: readonly string[] | ((email: string) => boolean);
  /** The client that fetches (and caches) IAP's public keys and verifies tokens. Defaults to a new `OAuth2Client`. */
  client?: IapTokenVerifier;
}

/** The header IAP puts its signed token in. */
export const IAP_HEADER = 'x-goog-iap-jwt-assertion';
const IAP_ISSUER = 'https://cloud.google.com/iap';
const OPTION_NAMES: OptionNames<IapAuthenticatorOptions> = { audience: true, allow: true, client: true };

/**
 * Builds an authenticator for requests that came through IAP: 401 when the header is missing or
 * the token does not verify (signature, expiry, issuer, audience), 403 when the email is not
 * allowed. It never throws.
 * @throws ConfigError when the options are invalid.
 */
export function iapAuthenticator(options: IapAuthenticatorOptions): Authenticator {
  if (typeof options !== 'object' || options === null) throw new ConfigError('iapAuthenticator needs options with `audience`.');
  rejectUnknownOptions('iapAuthenticator', options, OPTION_NAMES);
  if (typeof options.audience !== 'string' || !options.audience.startsWith('/projects/')) {
    throw new ConfigError('iapAuthenticator: `audience` must be IAP\'s audience, "/projects/NUMBER/apps/PROJECT_ID" or "/projects/NUMBER/global/backendServices/ID".');
  }
  const allowed = allowList(options.allow);
  const client = options.client ?? new OAuth2Client();
  const audience = options.audience;
  return markKind(async (req: AuthRequest): Promise<AuthVerdict> => {
    const header = req.headers[IAP_HEADER];
    const token = Array.isArray(header) ? undefined : header;
    if (!token) return refuse(401, `no ${IAP_HEADER} header: the request did not come through Identity-Aware Proxy`);
    const unsigned = unsignedProblem(token, 'iapAuthenticator');
    if (unsigned !== undefined) return refuse(401, `IAP ${unsigned}`);
    let email: unknown;
    try {
      const { pubkeys } = await client.getIapPublicKeysAsync();
      const ticket = await client.verifySignedJwtWithCertsAsync(token, pubkeys, audience, [IAP_ISSUER]);
      email = ticket.getPayload()?.email;
    } catch (error) {
      // google-auth-library's message quotes the token's header or payload: mapped, never copied.
      return refuse(401, `IAP token does not verify: ${verificationFailure(error)}`);
    }
    if (typeof email !== 'string' || email === '') return refuse(401, 'IAP token has no email');
    // The email is the principal: the status router's audit line of a bulk action says who asked.
    return allowed(email.toLowerCase()) ? { ok: true, principal: email } : refuse(403, `${email} is not allowed`);
  }, 'verifies-signature');
}

function allowList(allow: IapAuthenticatorOptions['allow']): (email: string) => boolean {
  if (allow === undefined) return () => true;
  if (typeof allow === 'function') return (email) => allow(email) === true;
  if (!Array.isArray(allow) || allow.length === 0 || allow.some((a) => typeof a !== 'string' || a === '')) {
    throw new ConfigError('iapAuthenticator: `allow` must be a non-empty array of emails or "@domain" suffixes, or a function (email) => boolean.');
  }
  const entries = allow.map((a) => a.toLowerCase());
  return (email) => entries.some((entry) => (entry.startsWith('@') ? email.endsWith(entry) : email === entry));
}

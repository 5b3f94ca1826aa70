/**
 * Authentication behind Cloud Run's IAM front. A Cloud Run service deployed with
 * `--no-allow-unauthenticated` is reached only through Google's front, which verifies the caller's
 * ID token (signature, expiry, audience) and its `roles/run.invoker`, answers 401/403 itself, and
 * passes the request on with the token's signature replaced by `SIGNATURE_REMOVED_BY_GOOGLE`.
 * Every invoker passes the front, so the app still checks which account calls: this authenticator
 * reads the claims of the stripped token (issuer, audience, expiry, the allowed service accounts)
 * and trusts the front for the signature. It is the only authenticator that accepts a stripped
 * token, and only that exact literal; on a public service such a token is a forgery, which is why
 * it is refused off Cloud Run and refuses a token that still carries a signature.
 *
 * Cloud Run checks `X-Serverless-Authorization` instead of `Authorization` when a request carries
 * both, and then passes `Authorization` on untouched: an invoker could put its own token in the
 * first and a forged stripped token in the second. So the token read here is the one Cloud Run
 * checked: `X-Serverless-Authorization` when present, `Authorization` otherwise.
 */
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import { platformLogger } from '../log/platform-logger';
import type { AuthRequest, AuthVerdict, Authenticator, Logger } from '../types';
import { markKind } from './authenticator-kind';
import { bearerToken, STRIPPED_SIGNATURE } from './bearer-jwt';
import { requirePlatform } from './platform';
import { ACCEPT, refuse } from './verdict';

/** Options of {@link cloudRunIamAuthenticator}. */
export interface CloudRunIamAuthenticatorOptions {
  /**
   * The audience the token must carry: the task's `oidcToken.audience` (or, when the task sets
   * none, its URL), or the Scheduler job's `--oidc-token-audience`. Several when given as an array.
   */
  audience: string | readonly string[];
  /**
   * The service account(s) allowed on this route: the tasks account on the task routes, the
   * scheduler's account on the sweep. The token's `email` must be one of them (compared
   * case-insensitively) and `email_verified` true. Any other invoker is refused with 403.
   */
  serviceAccountEmail: string | readonly string[];
  /** Issuers the token may come from. Defaults to `https://accounts.google.com` and `accounts.google.com`. */
  issuers?: readonly string[];
  /** Where the start-up line saying what is trusted (and a public-service warning) goes. Defaults to `platformLogger()`. */
  logger?: Logger;
  /**
   * Build it even though the process is not on Cloud Run (`K_SERVICE` unset, or App Engine's
   * `GAE_*` set). For tests only: off Cloud Run no front removes signatures, so anyone can forge
   * an accepted token.
   */
  skipPlatformCheck?: boolean;
}

/** Every option name of {@link CloudRunIamAuthenticatorOptions}. */
const OPTION_NAMES: OptionNames<CloudRunIamAuthenticatorOptions> = {
  audience: true, serviceAccountEmail: true, issuers: true, logger: true, skipPlatformCheck: true,
};

/** The issuers of Google ID tokens. */
const GOOGLE_ISSUERS: readonly string[] = Object.freeze(['https://accounts.google.com', 'accounts.google.com']);

/** Clock difference allowed on `iat` and `exp`, as google-auth-library allows when it verifies: 300 s. */
export const CLOCK_SKEW_SECONDS = 300;

/** Google ID tokens live an hour; one claiming more than a day is refused, as google-auth-library does. */
const MAX_LIFETIME_SECONDS = 86_400;

/** The name used in messages. */
const WHO = 'cloudRunIamAuthenticator';

/** The parsed configuration. */
interface Config {
  readonly audience: ReadonlySet<string>;
  readonly emails: ReadonlySet<string>;
  readonly issuers: ReadonlySet<string>;
  readonly logger: Logger;
}

/**
 * Builds the authenticator for a Cloud Run service deployed with `--no-allow-unauthenticated`.
 * It accepts a bearer token whose signature is exactly `SIGNATURE_REMOVED_BY_GOOGLE` and whose
 * claims name an allowed issuer, the audience, an unexpired time and an allowed, verified service
 * account. It answers 401 for a missing or malformed token, a token that still carries a signature
 * (the service is then reachable without Cloud Run's IAM check: deploy it with
 * `--no-allow-unauthenticated`, or use `oidcAuthenticator` on a public service), or failed claims;
 * 403 for another account. It logs once, when built, what it trusts. It never throws.
 * @throws ConfigError when the options are invalid, or the process is not on Cloud Run and
 *   `skipPlatformCheck` is not true.
 */
export function cloudRunIamAuthenticator(options: CloudRunIamAuthenticatorOptions): Authenticator {
  const config = parseOptions(options);
  requirePlatform(WHO, 'Cloud Run', options.skipPlatformCheck);
  config.logger.info(
    `${WHO}: trusting Cloud Run's IAM front to have verified token signatures and roles/run.invoker ` +
      `(the service must be deployed with --no-allow-unauthenticated); checking here issuer, audience, expiry and the account`,
    { audience: [...config.audience], serviceAccounts: [...config.emails], issuers: [...config.issuers] },
  );
  let warned = false;
  const authenticator = async (req: AuthRequest): Promise<AuthVerdict> => {
    try {
      const verdict = check(config, req);
      if (!verdict.ok && verdict.reason.startsWith(SIGNED_REASON) && !warned) {
        warned = true;
        config.logger.error(
          `${WHO}: a token arrived with its signature, so Cloud Run's IAM check is not in front of this service; every task is refused. ` +
            'Deploy with --no-allow-unauthenticated, or on a public service use oidcAuthenticator.',
        );
      }
      return verdict;
    } catch (error) {
      return refuse(401, `token could not be read: unexpected ${error instanceof Error ? error.name : typeof error}`);
    }
  };
  return markKind(authenticator, 'cloud-run-iam');
}

/** Checks the options once and fills in the defaults. */
function parseOptions(options: CloudRunIamAuthenticatorOptions): Config {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`${WHO} needs options with \`audience\` and \`serviceAccountEmail\`.`);
  }
  rejectUnknownOptions(WHO, options, OPTION_NAMES);
  const audience = nonEmptyList('audience', options.audience);
  const emails = nonEmptyList('serviceAccountEmail', options.serviceAccountEmail);
  const badEmail = emails.find((email) => !email.includes('@'));
  if (badEmail !== undefined) throw new ConfigError(`${WHO}: serviceAccountEmail "${badEmail}" is not an email address.`);
  const issuers = options.issuers === undefined ? GOOGLE_ISSUERS : nonEmptyList('issuers', options.issuers);
  const logger = options.logger ?? platformLogger();
  if (typeof logger !== 'object' || logger === null || typeof logger.info !== 'function' || typeof logger.error !== 'function') {
    throw new ConfigError(`${WHO}: \`logger\` must have info, warn and error methods.`);
  }
  return Object.freeze({
    audience: new Set(audience),
    emails: new Set(emails.map((email) => email.toLowerCase())),
    issuers: new Set(issuers),
    logger,
  });
}

/** A string or an array of strings, none empty, as a list; anything else is a ConfigError. */
function nonEmptyList(name: string, value: unknown): readonly string[] {
  const list: unknown[] = Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every((item) => typeof item === 'string' && item.trim() !== '')) {
    throw new ConfigError(`${WHO}: \`${name}\` must be a non-empty string or a non-empty array of them.`);
  }
  return list as string[];
}

/** The start of the reason given for a token that still carries a signature. */
const SIGNED_REASON = 'token carries a signature';

/** The header Cloud Run checks first, when a request carries it. */
const SERVERLESS_HEADER = 'x-serverless-authorization';

/** Every check in order; the first that fails decides. */
function check(config: Config, req: AuthRequest): AuthVerdict {
  const serverless = req.headers[SERVERLESS_HEADER];
  if (Array.isArray(serverless)) return refuse(401, 'more than one X-Serverless-Authorization header');
  // The token Cloud Run checked: X-Serverless-Authorization when present, never Authorization then.
  const token = bearerToken(serverless ?? req.headers.authorization);
  if (typeof token !== 'string') return token;
  const parts = token.split('.');
  if (parts.length !== 3 || !/^[A-Za-z0-9_-]+$/.test(parts[0]) || !/^[A-Za-z0-9_-]+$/.test(parts[1])) {
    return refuse(401, 'token is malformed: not a JWT');
  }
  if (parts[2] !== STRIPPED_SIGNATURE) {
    if (/^[A-Za-z0-9_-]+$/.test(parts[2])) {
      return refuse(401, `${SIGNED_REASON}: Cloud Run's IAM front removes it, so this request did not come through it (is the service public?)`);
    }
    return refuse(401, `token signature is not ${STRIPPED_SIGNATURE}`);
  }
  const header = segment(parts[0]);
  if (header === undefined) return refuse(401, 'token is malformed: its header is not a JSON object');
  if (header.alg !== 'RS256') return refuse(401, 'token algorithm is not RS256');
  const claims = segment(parts[1]);
  if (claims === undefined) return refuse(401, 'token is malformed: its payload is not a JSON object');
  if (typeof claims.iss !== 'string' || !config.issuers.has(claims.iss)) return refuse(401, 'token issuer (iss) is not allowed');
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.some((aud) => typeof aud === 'string' && config.audience.has(aud))) return refuse(401, 'token audience (aud) does not match');
  const timeProblem = lifetimeProblem(claims.iat, claims.exp, Math.floor(Date.now() / 1000));
  if (timeProblem !== undefined) return refuse(401, `token ${timeProblem}`);
  const email = claims.email;
  if (typeof email !== 'string' || email === '') return refuse(403, 'token has no email claim');
  if (!config.emails.has(email.toLowerCase())) return refuse(403, `token email ${email} is not an allowed service account`);
  if (claims.email_verified !== true) return refuse(403, `token email ${email} is not verified (email_verified is not true)`);
  return ACCEPT;
}

/** A base64url segment decoded as a JSON object, or undefined. */
function segment(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What is wrong with `iat` and `exp` at `now` (seconds), or undefined. */
function lifetimeProblem(iat: unknown, exp: unknown, now: number): string | undefined {
  if (typeof iat !== 'number' || !Number.isFinite(iat)) return 'has no issue time (iat)';
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return 'has no expiration time (exp)';
  if (exp - iat > MAX_LIFETIME_SECONDS) return 'expiration time is too far in the future (exp)';
  if (iat > now + CLOCK_SKEW_SECONDS) return 'is not valid yet (iat is in the future)';
  if (exp < now - CLOCK_SKEW_SECONDS) return 'has expired (exp)';
  return undefined;
}

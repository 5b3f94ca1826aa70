/**
 * Where the process runs, as far as an authenticator that trusts a platform's front must know:
 * App Engine sets `GAE_APPLICATION` (and `GAE_SERVICE`, `GAE_VERSION`, `GAE_INSTANCE`), Cloud Run
 * sets `K_SERVICE`. An authenticator that relies on what only one platform's front does is refused
 * at construction anywhere else, unless told `skipPlatformCheck` (tests).
 */
import { ConfigError } from '../errors/errors';

/** The platforms whose front an authenticator may trust. */
export type FrontPlatform = 'App Engine' | 'Cloud Run';

/** Which platform `env` says the process runs on, if either (App Engine's variables are looked at first). */
export function runningOn(env: Record<string, string | undefined> = process.env): FrontPlatform | undefined {
  if (env.GAE_APPLICATION || env.GAE_SERVICE) return 'App Engine';
  if (env.K_SERVICE) return 'Cloud Run';
  return undefined;
}

/** What each platform's front does that the authenticator relies on, for the error message. */
const RELIES_ON: Record<FrontPlatform, string> = {
  'App Engine': 'App Engine strips X-AppEngine-* headers from requests that come from outside; nowhere else does, so any client could send them',
  'Cloud Run': 'Cloud Run, in front of a service deployed with --no-allow-unauthenticated, verifies the token and removes its signature; nowhere else does, so any client could forge such a token',
};

/** The variables that show each platform. */
const SHOWN_BY: Record<FrontPlatform, string> = {
  'App Engine': 'GAE_APPLICATION or GAE_SERVICE',
  'Cloud Run': 'K_SERVICE (and no GAE_*)',
};

/**
 * Throws `ConfigError` unless the process runs on `platform` or `skip` is true.
 * @throws ConfigError naming the authenticator, what it relies on, and the override.
 */
export function requirePlatform(who: string, platform: FrontPlatform, skip: unknown, env: Record<string, string | undefined> = process.env): void {
  if (skip !== undefined && typeof skip !== 'boolean') throw new ConfigError(`${who}: \`skipPlatformCheck\` must be true or false.`);
  if (skip === true) return;
  const here = runningOn(env);
  if (here === platform) return;
  throw new ConfigError(
    `${who} trusts ${platform}'s front (${RELIES_ON[platform]}), but this process is not on ${platform} ` +
      `(${SHOWN_BY[platform]} is not set${here === undefined ? '' : `; it runs on ${here}`}). ` +
      'Choose the authenticator for where it runs (see docs/concepts/authentication.md); in a test, pass `skipPlatformCheck: true`.',
  );
}

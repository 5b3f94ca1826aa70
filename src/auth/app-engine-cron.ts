/**
 * Authentication of App Engine cron requests by the `X-Appengine-Cron` header, for the sweep route
 * (`locker.sweepHandler({ authenticate: appEngineCronAuthenticator() })` mounted where `cron.yaml`
 * points).
 */
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { AuthRequest, AuthVerdict, Authenticator } from '../types';
import { markKind } from './authenticator-kind';
import { requirePlatform } from './platform';
import { ACCEPT, refuse } from './verdict';

/** Options of {@link appEngineCronAuthenticator}. */
export interface AppEngineCronAuthenticatorOptions {
  /**
   * Build it even though the process is not on App Engine (no `GAE_APPLICATION`/`GAE_SERVICE`).
   * For tests only: off App Engine nobody strips `X-Appengine-Cron`, so anyone can send it.
   */
  skipPlatformCheck?: boolean;
}

/** Every option name of {@link AppEngineCronAuthenticatorOptions}. */
const OPTION_NAMES: OptionNames<AppEngineCronAuthenticatorOptions> = { skipPlatformCheck: true };

/** The header App Engine cron sets on its requests; lower-case, as Node reports headers. */
const CRON_HEADER = 'x-appengine-cron';

/**
 * Builds an authenticator that admits only App Engine cron: it accepts a request whose
 * `X-Appengine-Cron` header is exactly `true` and answers 401 to anything else.
 *
 * Only safe on App Engine (standard or flexible): App Engine strips `X-Appengine-*` headers from
 * requests that come from outside, so only its cron service can set this one. Anywhere else any
 * client can send it, so it is refused there at construction; on Cloud Run call the sweep from
 * Cloud Scheduler and check its token with `cloudRunIamAuthenticator` or `oidcAuthenticator`.
 * Task requests do not carry the header: keep `appEngineAuthenticator` for the task routes.
 * @throws ConfigError when the process is not on App Engine and `skipPlatformCheck` is not true.
 */
export function appEngineCronAuthenticator(options: AppEngineCronAuthenticatorOptions = {}): Authenticator {
  rejectUnknownOptions('appEngineCronAuthenticator', options, OPTION_NAMES);
  requirePlatform('appEngineCronAuthenticator', 'App Engine', options.skipPlatformCheck);
  return markKind((req: AuthRequest): AuthVerdict => {
    const cron = req.headers[CRON_HEADER];
    if (cron === undefined) return refuse(401, 'missing X-Appengine-Cron header: only App Engine cron may call this route');
    if (cron !== 'true') return refuse(401, 'X-Appengine-Cron is not "true": only App Engine cron may call this route');
    return ACCEPT;
  }, 'app-engine-header');
}

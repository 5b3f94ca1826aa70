/**
 * Authentication of App Engine cron requests by the `X-Appengine-Cron` header, for the sweep route
 * (`locker.sweepHandler({ authenticate: appEngineCronAuthenticator() })` mounted where `cron.yaml`
 * points).
 */
import type { AuthRequest, AuthVerdict, Authenticator } from '../types';
import { ACCEPT, refuse } from './verdict';

/** The header App Engine cron sets on its requests; lower-case, as Node reports headers. */
const CRON_HEADER = 'x-appengine-cron';

/**
 * Builds an authenticator that admits only App Engine cron: it accepts a request whose
 * `X-Appengine-Cron` header is exactly `true` and answers 401 to anything else.
 *
 * Only safe on App Engine (standard or flexible): App Engine strips `X-Appengine-*` headers from
 * requests that come from outside, so only its cron service can set this one. Anywhere else any
 * client can send it; on Cloud Run use Cloud Scheduler with `oidcAuthenticator` instead.
 * Task requests do not carry the header: keep `appEngineAuthenticator` for the task routes.
 */
export function appEngineCronAuthenticator(): Authenticator {
  return (req: AuthRequest): AuthVerdict => {
    const cron = req.headers[CRON_HEADER];
    if (cron === undefined) return refuse(401, 'missing X-Appengine-Cron header: only App Engine cron may call this route');
    if (cron !== 'true') return refuse(401, 'X-Appengine-Cron is not "true": only App Engine cron may call this route');
    return ACCEPT;
  };
}

/**
 * Authentication of Cloud Tasks App Engine-target requests by the `X-AppEngine-QueueName` header.
 */
import { ConfigError } from '../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { AuthRequest, AuthVerdict, Authenticator } from '../types';
import { markKind } from './authenticator-kind';
import { requirePlatform } from './platform';
import { ACCEPT, refuse } from './verdict';

/** The header App Engine sets on task requests; lower-case, as Node reports headers. */
const QUEUE_HEADER = 'x-appengine-queuename';

/** Options of {@link appEngineAuthenticator}. */
export interface AppEngineAuthenticatorOptions {
  /** Queues whose tasks are accepted. Defaults to any queue of the app. */
  queues?: readonly string[];
  /**
   * Build it even though the process is not on App Engine (no `GAE_APPLICATION`/`GAE_SERVICE`).
   * For tests only: off App Engine nobody strips `X-AppEngine-*`, so anyone can send the header.
   */
  skipPlatformCheck?: boolean;
}

/** Every option name of {@link AppEngineAuthenticatorOptions}. */
const OPTION_NAMES: OptionNames<AppEngineAuthenticatorOptions> = { queues: true, skipPlatformCheck: true };

/**
 * Builds an authenticator that trusts the `X-AppEngine-QueueName` header. It answers 401 when
 * the header is missing, 403 when it names a queue outside `queues`.
 *
 * Only safe on App Engine (standard or flexible): App Engine strips `X-AppEngine-*` headers from
 * requests that come from outside, so only its task queues can set them. Anywhere else (Cloud Run,
 * GKE, a VM, a local server) any client can send the header, so it is refused there at construction.
 * @throws ConfigError when `queues` is given but is not a non-empty array of queue names, or the
 *   process is not on App Engine and `skipPlatformCheck` is not true.
 */
export function appEngineAuthenticator(options: AppEngineAuthenticatorOptions = {}): Authenticator {
  rejectUnknownOptions('appEngineAuthenticator', options, OPTION_NAMES);
  const queues = parseQueues(options.queues);
  requirePlatform('appEngineAuthenticator', 'App Engine', options.skipPlatformCheck);
  return markKind((req: AuthRequest): AuthVerdict => {
    const queue = req.headers[QUEUE_HEADER];
    if (typeof queue !== 'string' || queue === '') return refuse(401, 'missing X-AppEngine-QueueName header');
    if (queues !== undefined && !queues.has(queue)) {
      return refuse(403, `queue "${queue}" is not among the allowed queues`);
    }
    return ACCEPT;
  }, 'app-engine-header');
}

/** The allow-list as a set, or undefined for any queue. */
function parseQueues(queues: unknown): ReadonlySet<string> | undefined {
  if (queues === undefined) return undefined;
  if (!Array.isArray(queues) || queues.length === 0) {
    throw new ConfigError(
      'appEngineAuthenticator: `queues` must be a non-empty array of queue names; leave it out to accept any queue.',
    );
  }
  const bad = queues.find((queue) => typeof queue !== 'string' || queue === '');
  if (bad !== undefined) {
    throw new ConfigError(`appEngineAuthenticator: \`queues\` holds ${JSON.stringify(bad)}, which is not a queue name.`);
  }
  return new Set(queues as string[]);
}

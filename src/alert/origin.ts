/**
 * Where an alert came from and where to act on it: the project and service that raised it, the
 * key as `X-Lock-Key` encodes it, and the step's page on the status router when its URL is known.
 */
import { encodeKey } from '../keys/key-codec';
import type { Config } from '../config/options';
import type { AlertEvent } from '../types';

/** The step's page under a status router mounted at `statusUrl`. */
export function stepPageUrl(statusUrl: string, encodedKey: string): string {
  return `${statusUrl}/step?key=${encodeURIComponent(encodedKey)}`;
}

/** The event with its origin filled in from the configuration (fields the event already has are kept). */
export function withOrigin(config: Pick<Config, 'project' | 'service' | 'statusUrl' | 'keyAppId'>, event: AlertEvent): AlertEvent {
  const encodedKey = event.encodedKey ?? safeEncode(event, config.keyAppId);
  const out: AlertEvent = { ...event };
  if (out.project === undefined && config.project) out.project = config.project;
  if (out.service === undefined && config.service) out.service = config.service;
  if (encodedKey) out.encodedKey = encodedKey;
  if (out.stepUrl === undefined && config.statusUrl && encodedKey) out.stepUrl = stepPageUrl(config.statusUrl, encodedKey);
  return out;
}

function safeEncode(event: AlertEvent, appId: string): string | undefined {
  try {
    return encodeKey(event.key, appId);
  } catch {
    return undefined;
  }
}

/**
 * An authenticator that accepts what any of several accepts, e.g. the local dispatcher's secret
 * or a Cloud Tasks OIDC token.
 */
import { ConfigError } from '../errors/errors';
import type { AuthRequest, AuthVerdict, Authenticator } from '../types';
import { kindsOf, markKind, type AuthenticatorKind } from './authenticator-kind';
import { refuse } from './verdict';

/**
 * Asks the authenticators in order and accepts as soon as one accepts; when all refuse, answers
 * with the first refusal. An authenticator that throws counts as a 401 refusal, so this one never
 * throws.
 *
 * `cloudRunIamAuthenticator` cannot be combined with an authenticator that verifies signatures
 * (`oidcAuthenticator`, `iapAuthenticator`) or trusts App Engine's headers: behind Cloud Run's IAM
 * front every token arrives stripped, so the other would never accept; on a public service the
 * stripped-token one would accept forgeries. The choice of mode is made once, not per request.
 * @throws ConfigError when no authenticator is given, one is not a function, or the combination
 *   mixes deployment modes as above.
 */
export function anyOf(...authenticators: Authenticator[]): Authenticator {
  if (authenticators.length === 0) throw new ConfigError('anyOf needs at least one authenticator.');
  const bad = authenticators.findIndex((authenticator) => typeof authenticator !== 'function');
  if (bad !== -1) throw new ConfigError(`anyOf: authenticator ${bad + 1} is not a function.`);
  const kinds = new Set<AuthenticatorKind>(authenticators.flatMap((authenticator) => [...kindsOf(authenticator)]));
  if (kinds.has('cloud-run-iam') && kinds.size > 1) {
    throw new ConfigError(
      'anyOf: cloudRunIamAuthenticator trusts Cloud Run\'s IAM front and cannot be combined with an authenticator that ' +
        'verifies signatures or trusts App Engine headers: choose the one that fits how the service is deployed (docs/concepts/authentication.md).',
    );
  }
  const all = [...authenticators];
  return markKind(async (req: AuthRequest): Promise<AuthVerdict> => {
    let first: AuthVerdict | undefined;
    for (const authenticator of all) {
      const verdict = await ask(authenticator, req);
      if (verdict.ok) return verdict;
      first ??= verdict;
    }
    return first as AuthVerdict;
  }, ...kinds);
}

/** One authenticator's verdict; a throw becomes a 401. */
async function ask(authenticator: Authenticator, req: AuthRequest): Promise<AuthVerdict> {
  try {
    return await authenticator(req);
  } catch (error) {
    const name = error instanceof Error ? error.name : typeof error;
    return refuse(401, `an authenticator failed unexpectedly (${name})`);
  }
}

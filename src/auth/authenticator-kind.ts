/**
 * What kind of check an authenticator the library built makes, remembered beside the function so
 * `anyOf` can refuse combinations that undo each other: a stripped-token authenticator (which
 * trusts Cloud Run's IAM front) next to one that verifies signatures means the deployment mode is
 * unknown, and the weaker one would decide.
 */

/** The kinds `anyOf` tells apart. */
export type AuthenticatorKind = 'cloud-run-iam' | 'verifies-signature' | 'app-engine-header';

const kinds = new WeakMap<object, ReadonlySet<AuthenticatorKind>>();

/** Records `fn`'s kinds (an `anyOf` has those of its members) and returns it. */
export function markKind<F extends object>(fn: F, ...kind: AuthenticatorKind[]): F {
  kinds.set(fn, new Set(kind));
  return fn;
}

/** The kinds recorded for `fn`; empty for an authenticator the library did not build. */
export function kindsOf(fn: object): ReadonlySet<AuthenticatorKind> {
  return kinds.get(fn) ?? new Set();
}

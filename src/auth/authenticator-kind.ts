/**
 * What kind of check an authenticator the library built makes, remembered beside the function so
 * `anyOf` can refuse combinations that undo each other: a stripped-token authenticator (which
 * trusts Cloud Run's IAM front) next to one that verifies signatures means the deployment mode is
 * unknown, and the weaker one would decide.
 */

/** The kinds `anyOf` tells apart. */
export type AuthenticatorKind = 'cloud-run-iam' | 'verifies-signature' | 'app-engine-header';

/** The property, on the function itself, that holds its kinds (a symbol: no user code names it by accident). */
const KINDS: unique symbol = Symbol('datastore-locker.authenticatorKinds');

/** Records `fn`'s kinds (an `anyOf` has those of its members) on it, and returns it. */
export function markKind<F extends object>(fn: F, ...kind: AuthenticatorKind[]): F {
  Object.defineProperty(fn, KINDS, { value: Object.freeze(new Set(kind)), enumerable: false, configurable: true });
  return fn;
}

/** The kinds recorded for `fn`; empty for an authenticator the library did not build. */
export function kindsOf(fn: object): ReadonlySet<AuthenticatorKind> {
  return (fn as { [KINDS]?: ReadonlySet<AuthenticatorKind> })[KINDS] ?? new Set();
}

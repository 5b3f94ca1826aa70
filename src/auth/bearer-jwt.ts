/**
 * The bearer token of a request and the signature segment of a JWT, read the same way by every
 * authenticator that takes `Authorization: Bearer <token>`. Cloud Run, in front of a service that
 * requires authentication, replaces the signature of the token it has checked with the literal
 * {@link STRIPPED_SIGNATURE}; only `cloudRunIamAuthenticator` accepts that, every other
 * authenticator refuses it here before any verifier (a pluggable `client` included) sees it.
 */
import type { AuthVerdict } from '../types';
import { refuse } from './verdict';

/**
 * What Cloud Run puts where the signature was, in front of a service deployed with
 * `--no-allow-unauthenticated` (Cloud Run's service-to-service authentication docs).
 */
export const STRIPPED_SIGNATURE = 'SIGNATURE_REMOVED_BY_GOOGLE';

/** The token of an `Authorization: Bearer <token>` header, or the refusal when there is none. */
export function bearerToken(header: string | undefined): string | AuthVerdict {
  if (header === undefined || header.trim() === '') return refuse(401, 'missing Authorization header');
  const match = /^(\S+)(?: +(\S+))? *$/.exec(header);
  if (match === null) return refuse(401, 'malformed Authorization header: expected "Bearer <token>"');
  if (match[1].toLowerCase() !== 'bearer') return refuse(401, 'Authorization scheme is not Bearer');
  if (match[2] === undefined) return refuse(401, 'malformed Authorization header: the Bearer token is missing');
  return match[2];
}

/**
 * Why a token cannot be verified by its signature (it has none, or Cloud Run's stand-in for one),
 * or undefined when its third segment may be a signature. `who` names the authenticator.
 */
export function unsignedProblem(token: string, who: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined; // the shape check says what is wrong
  const signature = parts[2];
  if (signature === STRIPPED_SIGNATURE) {
    return `token signature was removed (${STRIPPED_SIGNATURE}): ${who} verifies signatures and refuses it. ` +
      'Only Cloud Run in front of a service that requires authentication removes it; there use cloudRunIamAuthenticator. ' +
      'On a public service such a token is a forgery';
  }
  if (signature === '') return `token is unsigned: ${who} refuses it`;
  return undefined;
}

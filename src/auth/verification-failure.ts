/**
 * google-auth-library's verification errors, mapped to reasons. Its messages quote the token's
 * header or payload ("Invalid token signature: <token>", "Wrong recipient, payload audience != ...
 * <payload>"), so they are matched by their start and never repeated into a verdict or a log.
 */

/**
 * What google-auth-library's verification error means, as the end of a reason ("OIDC token " +
 * this): matched by the message's start, never quoting it.
 */
export function verificationFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const known = VERIFICATION_FAILURES.find(([start]) => message.startsWith(start));
  return known === undefined ? 'failed verification' : known[1];
}

/** The start of each google-auth-library verification message, and what it means. */
const VERIFICATION_FAILURES: readonly (readonly [string, string])[] = [
  ['Wrong number of segments', 'is malformed: not a JWT'],
  ["Can't parse token", 'is malformed: its header or payload is not JSON'],
  ['No pem found', 'is signed by an unknown key (kid not among the signing certificates)'],
  ['Invalid token signature', 'signature is invalid'],
  ['No issue time', 'has no issue time (iat)'],
  ['iat field', 'has an invalid issue time (iat)'],
  ['No expiration time', 'has no expiration time (exp)'],
  ['exp field', 'has an invalid expiration time (exp)'],
  ['Expiration time too far', 'expiration time is too far in the future (exp)'],
  ['Token used too early', 'is not valid yet (iat is in the future)'],
  ['Token used too late', 'has expired (exp)'],
  ['Invalid issuer', 'issuer (iss) is not allowed'],
  ['Wrong recipient', 'audience (aud) does not match'],
];


/**
 * Headers the library reads may be sent at most once. Node joins most repeated headers into one
 * string, but a request built by hand (or `headersDistinct`) may carry an array.
 */

/** What a repeated header reads as. */
export const REPEATED = Symbol('repeated header');

/** A header's one value: undefined when absent, `REPEATED` when sent more than once. */
export function singleHeader(value: string | string[] | undefined): string | undefined | typeof REPEATED {
  if (!Array.isArray(value)) return value;
  return value.length > 1 ? REPEATED : value[0];
}

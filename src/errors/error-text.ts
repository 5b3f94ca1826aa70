/**
 * Errors as text, written one way everywhere: the short form for messages and log fields, and the
 * long form (with the stack, bounded) stored in `lock_err` and shown in alerts.
 */

/** Longest stored error text (message and stack); Datastore limits unindexed strings to 1 MiB. */
export const MAX_ERROR_LENGTH = 8 * 1024;

/** What ends an error text cut short to be stored. */
export const TRUNCATED = '… (truncated)';

/** An error's message (anything else thrown, as a string): for log fields and one-line messages. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** An error as stored in `lock_err`: its stack (or name and message), at most `MAX_ERROR_LENGTH`. */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - TRUNCATED.length)}${TRUNCATED}` : text;
}

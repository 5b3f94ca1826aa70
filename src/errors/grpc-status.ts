/**
 * gRPC status codes as the Google clients report them (`error.code`), read and described one way
 * for every part that talks gRPC (Datastore, Cloud Tasks).
 */

/** gRPC status names, by code. */
const GRPC_STATUS = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED',
  'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
] as const;

/** The gRPC status code of an error, if it has one. */
export function grpcCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'number' ? error.code : undefined;
}

/** "PERMISSION_DENIED (7): details" for a gRPC error, its message otherwise. */
export function describeGrpcError(error: unknown): string {
  const code = grpcCode(error);
  const details = (error as { details?: unknown } | null)?.details;
  const message = typeof details === 'string' && details !== '' ? details : error instanceof Error ? error.message : String(error);
  if (code === undefined) return message;
  return `${GRPC_STATUS[code] ?? 'status'} (${code}): ${message}`;
}

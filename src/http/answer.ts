/**
 * How a task request is answered: the status, the message and the `Retry-After` the middleware
 * sends (see \`http/middleware.ts\`).
 */
import type { AnswerReason } from '../events';

/** How a task request is answered. */
export interface Answer {
  status: number;
  message: string;
  /** Seconds, for a `Retry-After` header. */
  retryAfter?: number;
  /** Why the task did not run, when it was answered before the handler (the take span's outcome). */
  outcome?: 'refused' | 'dropped' | 'expired';
  /** Why a non-2xx answer was given (the `retryLater` event); a refusal is `held`. */
  reason?: AnswerReason;
}

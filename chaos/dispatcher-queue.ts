/**
 * The workers' side of the chaos dispatcher: a `Queue` whose `enqueue` is a create-task call to
 * the dispatcher over HTTP on loopback, and the authenticator that accepts the dispatcher's
 * deliveries (a shared secret in a header). Only the library's public contracts are used.
 */
import { timingSafeEqual } from 'node:crypto';
import { QueueError, type Authenticator, type Queue, type TaskRequest } from '../src/index';

/** The header that carries the shared secret, on create calls and on deliveries alike. */
export const SECRET_HEADER = 'x-chaos-secret';

/** What a create-task call sends: a `TaskRequest` with its schedule time as epoch ms. */
export interface CreateTaskBody {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  scheduleTimeMs?: number;
}

/** A `Queue` that creates tasks on the chaos dispatcher. */
export class DispatcherQueue implements Queue {
  constructor(
    private readonly url: string,
    private readonly secret: string,
    private readonly timeoutMs = 5_000,
  ) {}

  /** Resolves once the dispatcher holds the task (ALREADY_EXISTS included); rejects with QueueError otherwise. */
  async enqueue(task: TaskRequest): Promise<void> {
    const body: CreateTaskBody = { name: task.name, path: task.path, headers: task.headers, body: task.body };
    if (task.scheduleTime) body.scheduleTimeMs = task.scheduleTime.getTime();
    let status: number;
    try {
      const res = await fetch(`${this.url}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SECRET_HEADER]: this.secret },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.status;
      await res.arrayBuffer();
    } catch (error) {
      throw new QueueError(`the dispatcher could not be reached: ${String(error)}`, { cause: error });
    }
    if (status === 200 || status === 409) return; // 409: ALREADY_EXISTS counts as created
    throw new QueueError(`the dispatcher answered ${status} to the creation of ${task.name}`);
  }

  /** Accepts the requests that carry the shared secret. */
  authenticator(): Authenticator {
    return secretAuthenticator(this.secret);
  }
}

/** Accepts requests whose `X-Chaos-Secret` equals `secret` (constant-time comparison). */
export function secretAuthenticator(secret: string): Authenticator {
  const expected = Buffer.from(secret);
  return (req) => {
    const given = req.headers[SECRET_HEADER];
    const actual = typeof given === 'string' ? Buffer.from(given) : undefined;
    if (actual && actual.length === expected.length && timingSafeEqual(actual, expected)) return { ok: true };
    return { ok: false, status: 401, reason: `missing or wrong ${SECRET_HEADER}` };
  };
}

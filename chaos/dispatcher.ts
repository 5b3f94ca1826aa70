/**
 * The chaos dispatcher: it plays Cloud Tasks for the workers, over HTTP on loopback.
 *
 * Semantics (what Cloud Tasks promises, and the faults it is allowed to show):
 * - Creating: `POST /tasks` with the shared secret and a `CreateTaskBody`. A name already used in
 *   this run (the de-duplication window is the whole run; Cloud Tasks' is about an hour) is
 *   refused with 409 ALREADY_EXISTS, and nothing else happens. A create call may fail
 *   (`createFailRate`): half of those fail before the task exists (500), half after it was created
 *   (500, but the task runs: the answer was lost).
 * - At least once: a task is delivered until an answer is 2xx. Any other answer, a refused
 *   connection or no answer within `dispatchDeadlineMs` is retried after an exponential backoff
 *   (`minBackoffMs` doubling up to `maxBackoffMs`); for 503 and 429 a `Retry-After` longer than
 *   the backoff is honoured. After `maxAttempts` deliveries without a 2xx the task is dropped.
 * - Duplicates (`dupRate`): a task is delivered one extra time, shortly after (0-1 s), whatever
 *   happens to the first delivery; its answer is counted, never retried.
 * - Schedule times and reordering: a task is not delivered before its schedule time; a delivery is
 *   held back by up to `lateMaxMs` (`lateRate`), so tasks run in no particular order.
 * - Loss (`lossRate`): a task is accepted (200) and then never delivered.
 * - Delivery goes to a random live worker, with Cloud Tasks' headers (`X-CloudTasks-TaskName`,
 *   `-QueueName`, `-TaskRetryCount`, `-TaskExecutionCount`, `-TaskETA`) and the shared secret.
 * - At most `concurrency` deliveries are in flight; the rest wait their turn.
 * - Every request to a worker (deliveries, and the scheduler's `POST /sweep` through `call()`)
 *   tells the worker pool when it is sent and when it ended (`enter`): the pool counts requests in
 *   flight per worker, which is what gives a worker CPU on Cloud Run. Once the faults stopped,
 *   requests carry the calm header.
 *
 * Every fault decision is a pure function of the seed and the step (key, seq, and which create of
 * that step it is), so a seed gives the same fault schedule in every run.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SECRET_HEADER, type CreateTaskBody } from './dispatcher-queue';
import type { ChaosOptions } from './options';
import { CALM_HEADER } from './protocol';
import { chance } from './random';

/** The dispatcher's settings: the run's own (documented in `ChaosOptions`), its secret and its workers. */
export interface DispatcherOptions extends Pick<ChaosOptions,
  'seed' | 'dupRate' | 'lateRate' | 'lateMaxMs' | 'lossRate' | 'createFailRate' | 'maxAttempts' | 'minBackoffMs' | 'maxBackoffMs' | 'dispatchDeadlineMs' | 'concurrency'> {
  secret: string;
  /** The base URLs of the live workers, asked at each delivery. */
  workers: () => readonly string[];
  /**
   * Told, in the same turn as `workers()` was asked, that a request goes to `url`; returns what to
   * call once it ended, with its status (0: no answer). Defaults to nothing.
   */
  enter?: (url: string) => (status: number) => void;
}

/** One line of a chain's history as the dispatcher saw it. */
export interface TaskEvent {
  t: number;
  what: 'created' | 'already-exists' | 'create-failed' | 'lost' | 'delivered' | 'dropped';
  name: string;
  seq: number;
  status?: number;
  worker?: string;
  attempt?: number;
  duplicate?: boolean;
}

/** Counters of a run. */
export interface DispatcherStats {
  creates: number;
  alreadyExists: number;
  createFaults: number;
  deliveries: number;
  duplicatesDelivered: number;
  lateDeliveries: number;
  tasksLost: number;
  tasksDropped: number;
  statuses: Record<string, number>;
  /** Per task that got a 2xx: ms from its creation (or schedule time) to that answer. */
  latenciesMs: number[];
  /** Per delivery that got an answer: ms from the request to the answer. */
  answerMs: number[];
}

interface Task {
  body: CreateTaskBody;
  key: string;
  seq: number;
  dueAt: number;
  attempts: number;
  executions: number;
  done: boolean;
}

/** Cloud Tasks on loopback, with faults. */
export class Dispatcher {
  readonly stats: DispatcherStats = {
    creates: 0, alreadyExists: 0, createFaults: 0, deliveries: 0, duplicatesDelivered: 0, lateDeliveries: 0,
    tasksLost: 0, tasksDropped: 0, statuses: {}, latenciesMs: [], answerMs: [],
  };
  /** Per `X-Lock-Key`: what happened to its tasks. */
  readonly history = new Map<string, TaskEvent[]>();
  private readonly names = new Set<string>();
  private readonly createsPerStep = new Map<string, number>();
  private readonly ready: (() => Promise<void>)[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private inFlight = 0;
  private calm = false;
  private server: Server | undefined;

  constructor(private readonly options: DispatcherOptions) {}

  /** Listens on 127.0.0.1; resolves with the base URL. */
  async start(): Promise<string> {
    const server = createServer((req, res) => void this.onRequest(req, res));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Stops injecting faults (loss, duplicates, lateness, failed creates); delivery goes on. */
  quiet(): void {
    this.calm = true;
  }

  /**
   * Sends `POST path` (with the secret) to a random live worker, as Cloud Scheduler would, outside
   * the delivery queue; resolves with the status (0: no worker, or no answer within `timeoutMs`).
   */
  async call(path: string, timeoutMs: number): Promise<number> {
    const workers = this.options.workers();
    const worker = workers.length > 0 ? workers[Math.floor(Math.random() * workers.length)]! : undefined;
    if (!worker) return 0;
    const ended = this.options.enter?.(worker);
    let status = 0;
    try {
      const res = await fetch(`${worker}${path}`, { method: 'POST', headers: this.headers(), signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      // no answer
    }
    ended?.(status);
    return status;
  }

  /** Deliveries waiting or in flight. */
  pending(): number {
    return this.timers.size + this.ready.length + this.inFlight;
  }

  /** Stops delivering and closes the server. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.ready.length = 0;
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    server?.closeAllConnections();
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/tasks' || req.headers[SECRET_HEADER] !== this.options.secret) {
      res.writeHead(req.headers[SECRET_HEADER] === this.options.secret ? 404 : 401).end();
      return;
    }
    let body: CreateTaskBody;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as CreateTaskBody;
    } catch {
      res.writeHead(400).end('not JSON');
      return;
    }
    const status = this.create(body);
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status }));
  }

  /** Creates a task; returns the HTTP status of the create call. */
  private create(body: CreateTaskBody): number {
    const key = body.headers['x-lock-key'] ?? '';
    const seq = Number(body.headers['x-lock-seq']);
    if (this.names.has(body.name)) {
      this.stats.alreadyExists++;
      this.note(key, { t: Date.now(), what: 'already-exists', name: body.name, seq });
      return 409;
    }
    const stepId = `${key}/${seq}`;
    const nth = (this.createsPerStep.get(stepId) ?? 0) + 1;
    this.createsPerStep.set(stepId, nth);
    const roll = (what: string): number => chance(this.options.seed, 'dispatch', what, key, seq, nth);
    const createFault = !this.calm && roll('create-fail') < this.options.createFailRate;
    if (createFault && roll('create-fail-before') < 0.5) {
      this.stats.createFaults++;
      this.note(key, { t: Date.now(), what: 'create-failed', name: body.name, seq });
      return 500;
    }
    this.names.add(body.name);
    this.stats.creates++;
    this.note(key, { t: Date.now(), what: 'created', name: body.name, seq });
    if (!this.calm && roll('lose') < this.options.lossRate) {
      this.stats.tasksLost++;
      this.note(key, { t: Date.now(), what: 'lost', name: body.name, seq });
    } else {
      const late = !this.calm && roll('late') < this.options.lateRate ? roll('late-by') * this.options.lateMaxMs : 0;
      if (late > 0) this.stats.lateDeliveries++;
      const dueAt = Math.max(Date.now(), body.scheduleTimeMs ?? 0);
      const task: Task = { body, key, seq, dueAt, attempts: 0, executions: 0, done: false };
      this.after(dueAt + late - Date.now(), () => this.deliver(task, false));
      if (!this.calm && roll('duplicate') < this.options.dupRate) {
        this.after(dueAt + late + roll('duplicate-after') * 1_000 - Date.now(), () => this.deliver(task, true));
      }
    }
    if (createFault) {
      this.stats.createFaults++;
      return 500; // created, but the answer says otherwise
    }
    return 200;
  }

  /** Queues a delivery to run in `ms`, within the concurrency limit. */
  private after(ms: number, delivery: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.ready.push(delivery);
      this.pump();
    }, Math.max(0, ms));
    this.timers.add(timer);
  }

  private pump(): void {
    while (this.inFlight < this.options.concurrency && this.ready.length > 0) {
      const delivery = this.ready.shift()!;
      this.inFlight++;
      void delivery().finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** One delivery of a task to a random live worker; schedules the retry when it is not a 2xx. */
  private async deliver(task: Task, duplicate: boolean): Promise<void> {
    const workers = this.options.workers();
    const worker = workers.length > 0 ? workers[Math.floor(Math.random() * workers.length)]! : undefined;
    const attempt = duplicate ? task.attempts : task.attempts++;
    const sentAt = Date.now();
    const ended = worker ? this.options.enter?.(worker) : undefined;
    const { status, retryAfterMs } = worker ? await this.post(worker, task, attempt) : { status: 0, retryAfterMs: 0 };
    ended?.(status);
    if (status !== 0) this.stats.answerMs.push(Date.now() - sentAt);
    this.stats.deliveries++;
    if (duplicate) this.stats.duplicatesDelivered++;
    this.stats.statuses[String(status)] = (this.stats.statuses[String(status)] ?? 0) + 1;
    if (status !== 0) task.executions++;
    this.note(task.key, { t: Date.now(), what: 'delivered', name: task.body.name, seq: task.seq, status, worker, attempt, duplicate });
    if (duplicate || task.done) return;
    if (status >= 200 && status < 300) {
      task.done = true;
      this.stats.latenciesMs.push(Date.now() - task.dueAt);
      return;
    }
    if (task.attempts >= this.options.maxAttempts) {
      this.stats.tasksDropped++;
      this.note(task.key, { t: Date.now(), what: 'dropped', name: task.body.name, seq: task.seq, attempt });
      return;
    }
    const backoff = Math.min(this.options.maxBackoffMs, this.options.minBackoffMs * 2 ** (task.attempts - 1));
    const honoured = status === 503 || status === 429 ? Math.max(backoff, retryAfterMs) : backoff;
    this.after(honoured, () => this.deliver(task, false));
  }

  /** POSTs the task; status 0 when there was no answer (refused, reset, past the deadline). */
  private async post(worker: string, task: Task, attempt: number): Promise<{ status: number; retryAfterMs: number }> {
    const headers: Record<string, string> = {
      ...task.body.headers,
      'content-type': 'application/json',
      ...this.headers(),
      'x-cloudtasks-taskname': task.body.name,
      'x-cloudtasks-queuename': 'chaos',
      'x-cloudtasks-taskretrycount': String(attempt),
      'x-cloudtasks-taskexecutioncount': String(task.executions),
      'x-cloudtasks-tasketa': (task.dueAt / 1000).toFixed(3),
    };
    try {
      const res = await fetch(`${worker}${task.body.path}`, {
        method: 'POST', headers, body: task.body.body, signal: AbortSignal.timeout(this.options.dispatchDeadlineMs),
      });
      await res.arrayBuffer();
      const retryAfter = Number(res.headers.get('retry-after'));
      return { status: res.status, retryAfterMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : 0 };
    } catch {
      return { status: 0, retryAfterMs: 0 };
    }
  }

  /** The headers of every request to a worker: the secret, and the calm header once the faults stopped. */
  private headers(): Record<string, string> {
    return this.calm ? { [SECRET_HEADER]: this.options.secret, [CALM_HEADER]: '1' } : { [SECRET_HEADER]: this.options.secret };
  }

  private note(key: string, event: TaskEvent): void {
    let events = this.history.get(key);
    if (!events) this.history.set(key, (events = []));
    events.push(event);
  }
}

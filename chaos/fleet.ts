/**
 * The K worker processes: started with `tsx`, each announcing its port over IPC; stopped on
 * purpose by the fault schedule and started again in the same slot. A worker that exits when
 * nobody stopped it is a death the run reports (an invariant).
 *
 * Two modes model the platform (Cloud Run):
 * - `freezeIdle`: the fleet counts the requests in flight to each worker (the dispatcher tells it,
 *   `enter()`), SIGSTOPs a worker once its last one ended and SIGCONTs it before the next is sent.
 *   A worker idle for `scaleInAfterMs` is taken out of rotation, stopped and replaced (scale-in).
 *   A stopped process reads nothing: IPC messages, connections from the dispatcher and data from
 *   the store proxy wait in the kernel's buffers until it runs again, its timers fire late, and it
 *   dies on SIGKILL as it is.
 * - `sigterm`: every stop is SIGTERM (with SIGCONT, so a frozen worker can drain: Cloud Run gives
 *   CPU to the shutdown), `graceMs`, then SIGKILL if it still runs; otherwise a stop is a bare
 *   SIGKILL. A worker stopped by a fault stays in rotation while it drains (tasks reach it and
 *   must be refused); one scaled in, or stopped at the end, is taken out first.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { ChaosOptions } from './options';
import type { OrchestratorMessage, WorkerConfig, WorkerMessage } from './protocol';

/** A worker that died without being stopped on purpose, or whose drain failed (exit code other than 0). */
export interface UnexpectedDeath {
  slot: number;
  incarnation: number;
  code: number | null;
  signal: string | null;
  stderr: string;
}

/** A SIGTERM the fleet sent (`sigterm` mode), and what came of it. */
export interface TermEvent {
  slot: number;
  incarnation: number;
  /** A fault (`kill`: a deploy, a crash), scale-in of an idle worker, or the end of the run. */
  why: 'kill' | 'scale-in' | 'end';
  /** When SIGTERM was sent, epoch ms. */
  t: number;
  /** When the process exited. */
  exitT?: number;
  code?: number | null;
  signal?: string | null;
  /** SIGKILLed at the end of the grace. */
  killed: boolean;
}

/** What the fleet did. */
export interface FleetStats {
  /** Workers stopped by the fault schedule (SIGKILL, or SIGTERM and the grace). */
  kills: number;
  /** SIGSTOPs after a last answer, and SIGCONTs before a request (or a SIGTERM). */
  freezes: number;
  thaws: number;
  /** Idle workers stopped and replaced. */
  scaleIns: number;
  /** SIGTERMs sent, and of those, workers SIGKILLed at the end of the grace. */
  terms: number;
  termKills: number;
  /** Requests sent to a worker after its SIGTERM, by answer (0: none). */
  answersWhileStopping: Record<string, number>;
}

/** The modes (see the file's comment). */
export type FleetMode = Pick<ChaosOptions, 'freezeIdle' | 'scaleInAfterMs' | 'sigterm' | 'graceMs'>;

interface Slot {
  config: WorkerConfig;
  child: ChildProcess | undefined;
  url: string | undefined;
  stderr: string;
  /** Set while we stop it, so its exit is not a death. */
  killing: boolean;
  /** When SIGTERM was sent to the current child; undefined when none was. */
  stoppingAt: number | undefined;
  /** Requests in flight to the current child. */
  inFlight: number;
  frozen: boolean;
  /** Since when the current child has had no request in flight. */
  idleSince: number;
}

const WORKER = join(__dirname, 'worker.ts');
const START_TIMEOUT_MS = 60_000;
/** Unexpected deaths after which a dead worker is no longer started again (something is broken for good). */
const MAX_RELAUNCHES = 20;
/** How long a worker stopped at the end of the run (no `sigterm` mode) may take after SIGTERM. */
const END_GRACE_MS = 5_000;
const SCALE_IN_CHECK_MS = 250;

export class Fleet {
  readonly deaths: UnexpectedDeath[] = [];
  readonly terms: TermEvent[] = [];
  readonly stats: FleetStats = { kills: 0, freezes: 0, thaws: 0, scaleIns: 0, terms: 0, termKills: 0, answersWhileStopping: {} };
  private readonly slots: Slot[];
  private readonly busy = new Set<Promise<void>>();
  private scaleInTimer: NodeJS.Timeout | undefined;
  private calm = false;
  private stopping = false;

  constructor(configs: readonly WorkerConfig[], private readonly mode: FleetMode) {
    this.slots = configs.map((config) => ({
      config, child: undefined, url: undefined, stderr: '', killing: false, stoppingAt: undefined, inFlight: 0, frozen: false, idleSince: Date.now(),
    }));
  }

  /** Starts every worker; resolves once all listen. Scale-in starts with them. */
  async start(): Promise<void> {
    await Promise.all(this.slots.map((slot) => this.launch(slot)));
    if (this.mode.freezeIdle && this.mode.scaleInAfterMs > 0) this.scaleInTimer = setInterval(() => this.scaleInIdle(), SCALE_IN_CHECK_MS);
  }

  /** The base URLs of the workers in rotation now. */
  urls(): string[] {
    return this.slots.flatMap((slot) => (slot.url ? [slot.url] : []));
  }

  /**
   * A request goes to `url` now: counted in flight, and the worker thawed when frozen. Returns what
   * to call when the request ended (answered, or given up); the worker is frozen again after its last.
   */
  enter(url: string): (status: number) => void {
    const slot = this.slots.find((s) => s.url === url);
    const child = slot?.child;
    if (!slot || !child) return () => undefined;
    slot.inFlight++;
    if (slot.frozen) this.thaw(slot);
    const afterTerm = slot.stoppingAt !== undefined;
    return (status) => {
      if (afterTerm) this.stats.answersWhileStopping[String(status)] = (this.stats.answersWhileStopping[String(status)] ?? 0) + 1;
      if (slot.child !== child) return; // replaced meanwhile
      slot.inFlight--;
      if (slot.inFlight > 0) return;
      slot.idleSince = Date.now();
      this.freezeIfIdle(slot);
    };
  }

  /** Stops the worker in `slot` (as the mode says) and starts it again; resolves once the new one listens. */
  async kill(index: number): Promise<void> {
    const slot = this.slots[index]!;
    if (!slot.child || slot.killing) return;
    this.stats.kills++;
    await this.replace(slot, 'kill');
  }

  /** Turns the handlers' faults off in every worker, now and after restarts (a frozen worker reads the message when it runs again; requests carry the calm header too). */
  quiet(): void {
    this.calm = true;
    for (const slot of this.slots) this.tell(slot, { type: 'calm' });
  }

  /**
   * Stops every worker; these exits are not deaths. With `sigterm`: SIGTERM, the grace, SIGKILL.
   * Otherwise a frozen worker is SIGKILLed as it is (it would get no CPU again: scale-in), and the
   * others get SIGTERM, then SIGKILL after 5 s.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.scaleInTimer);
    await Promise.all([...this.busy]);
    await Promise.all(this.slots.map(async (slot) => {
      slot.url = undefined;
      if (this.mode.sigterm) return this.halt(slot, 'end');
      const child = slot.child;
      if (!child || !alive(child)) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if (this.mode.freezeIdle && slot.frozen) {
        child.kill('SIGKILL');
      } else {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), END_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      await exited;
    }));
  }

  /** Scale-in: every worker in rotation idle for `scaleInAfterMs` is taken out, stopped and replaced. */
  private scaleInIdle(): void {
    const now = Date.now();
    for (const slot of this.slots) {
      if (!slot.url || slot.killing || slot.inFlight > 0 || now - slot.idleSince < this.mode.scaleInAfterMs) continue;
      slot.url = undefined; // out of rotation first: no request picks it from now on
      this.stats.scaleIns++;
      const replacing = this.replace(slot, 'scale-in').finally(() => this.busy.delete(replacing));
      this.busy.add(replacing);
    }
  }

  /** Stops the slot's worker and starts a new incarnation (unless the fleet is stopping). */
  private async replace(slot: Slot, why: 'kill' | 'scale-in'): Promise<void> {
    await this.halt(slot, why);
    if (this.stopping) return;
    slot.config = { ...slot.config, incarnation: slot.config.incarnation + 1, calm: this.calm };
    await this.launch(slot);
  }

  /** Stops the slot's worker as the mode says; resolves once it exited. */
  private async halt(slot: Slot, why: TermEvent['why']): Promise<void> {
    const child = slot.child;
    if (!child || !alive(child)) return;
    slot.killing = true;
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    if (this.mode.sigterm) {
      const event: TermEvent = { slot: slot.config.slot, incarnation: slot.config.incarnation, why, t: Date.now(), killed: false };
      this.terms.push(event);
      this.stats.terms++;
      slot.stoppingAt = event.t;
      child.kill('SIGTERM');
      if (slot.frozen) this.thaw(slot); // the shutdown gets CPU
      const timer = setTimeout(() => {
        if (!alive(child)) return;
        event.killed = true;
        this.stats.termKills++;
        child.kill('SIGKILL');
      }, this.mode.graceMs);
      const { code, signal } = await exited;
      clearTimeout(timer);
      Object.assign(event, { exitT: Date.now(), code, signal });
      if (code !== null && code !== 0) this.deaths.push({ slot: slot.config.slot, incarnation: slot.config.incarnation, code, signal, stderr: slot.stderr });
    } else {
      slot.url = undefined;
      child.kill('SIGKILL'); // a stopped process dies as it is
      await exited;
    }
    slot.url = undefined;
    slot.killing = false;
    slot.stoppingAt = undefined;
    slot.frozen = false;
  }

  private freezeIfIdle(slot: Slot): void {
    const child = slot.child;
    if (!this.mode.freezeIdle || this.stopping || slot.frozen || slot.inFlight > 0 || slot.stoppingAt !== undefined || !child || !alive(child)) return;
    child.kill('SIGSTOP');
    slot.frozen = true;
    this.stats.freezes++;
  }

  private thaw(slot: Slot): void {
    const child = slot.child;
    slot.frozen = false;
    if (!child || !alive(child)) return;
    child.kill('SIGCONT');
    this.stats.thaws++;
  }

  private tell(slot: Slot, message: OrchestratorMessage): void {
    if (slot.child?.connected) slot.child.send(message);
  }

  private launch(slot: Slot): Promise<void> {
    const child = fork(WORKER, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, CHAOS_WORKER: JSON.stringify(slot.config) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    Object.assign(slot, { child, stderr: '', inFlight: 0, frozen: false, stoppingAt: undefined });
    child.stderr?.on('data', (chunk: Buffer) => {
      slot.stderr = (slot.stderr + chunk.toString()).slice(-4_000);
    });
    const incarnation = slot.config.incarnation;
    child.once('exit', (code, signal) => {
      if (slot.child === child) slot.url = undefined;
      if (slot.killing || this.stopping) return;
      this.deaths.push({ slot: slot.config.slot, incarnation, code, signal, stderr: slot.stderr });
      if (this.deaths.length <= MAX_RELAUNCHES) void this.launch(slot); // keep the fleet at K
    });
    return new Promise((resolve) => {
      // A slow start (a loaded machine) is waited for no longer than this; the worker joins when it listens.
      const timer = setTimeout(() => {
        process.stderr.write(`chaos: worker ${slot.config.slot} did not start within ${START_TIMEOUT_MS / 1000} s; going on without it until it does\n`);
        resolve();
      }, START_TIMEOUT_MS);
      child.on('message', (message: WorkerMessage) => {
        if (message.type !== 'ready' || slot.child !== child) return;
        clearTimeout(timer);
        if (!slot.killing && !this.stopping) slot.url = `http://127.0.0.1:${message.port}`;
        slot.idleSince = Date.now();
        this.freezeIfIdle(slot); // no request yet: no CPU
        resolve();
      });
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(); // a death is reported above
      });
    });
  }
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

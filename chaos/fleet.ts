/**
 * The K worker processes: started with `tsx`, each announcing its port over IPC; SIGKILLed on
 * purpose by the fault schedule and started again in the same slot. A worker that exits when
 * nobody killed it is a death the run reports (an invariant).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { OrchestratorMessage, WorkerConfig, WorkerMessage } from './protocol';

/** A worker that died without being killed on purpose. */
export interface UnexpectedDeath {
  slot: number;
  incarnation: number;
  code: number | null;
  signal: string | null;
  stderr: string;
}

interface Slot {
  config: WorkerConfig;
  child: ChildProcess | undefined;
  url: string | undefined;
  stderr: string;
  /** Set when we kill it, so its exit is not a death. */
  killing: boolean;
}

const WORKER = join(__dirname, 'worker.ts');
const START_TIMEOUT_MS = 60_000;
/** Unexpected deaths after which a dead worker is no longer started again (something is broken for good). */
const MAX_RELAUNCHES = 20;

export class Fleet {
  readonly deaths: UnexpectedDeath[] = [];
  kills = 0;
  private readonly slots: Slot[];
  private calm = false;
  private stopping = false;

  constructor(configs: readonly WorkerConfig[]) {
    this.slots = configs.map((config) => ({ config, child: undefined, url: undefined, stderr: '', killing: false }));
  }

  /** Starts every worker; resolves once all listen. */
  async start(): Promise<void> {
    await Promise.all(this.slots.map((slot) => this.launch(slot)));
  }

  /** The base URLs of the workers that listen now. */
  urls(): string[] {
    return this.slots.flatMap((slot) => (slot.url ? [slot.url] : []));
  }

  /** SIGKILLs the worker in `slot` and starts it again; resolves once the new one listens. */
  async kill(index: number): Promise<void> {
    const slot = this.slots[index]!;
    if (!slot.child || slot.killing) return;
    slot.killing = true;
    slot.url = undefined;
    const exited = new Promise((resolve) => slot.child!.once('exit', resolve));
    slot.child.kill('SIGKILL');
    this.kills++;
    await exited;
    slot.killing = false;
    slot.config = { ...slot.config, incarnation: slot.config.incarnation + 1, calm: this.calm };
    await this.launch(slot);
  }

  /** Turns the handlers' faults off in every worker, now and after restarts. */
  quiet(): void {
    this.calm = true;
    for (const slot of this.slots) this.tell(slot, { type: 'calm' });
  }

  /** Stops every worker (SIGTERM, then SIGKILL); these exits are not deaths. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.slots.map(async (slot) => {
      const child = slot.child;
      slot.url = undefined;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }));
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
    slot.child = child;
    slot.stderr = '';
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
        if (message.type !== 'ready') return;
        clearTimeout(timer);
        slot.url = `http://127.0.0.1:${message.port}`;
        resolve();
      });
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(); // a death is reported above
      });
    });
  }
}

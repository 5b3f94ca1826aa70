/**
 * How far the run got, read from the handlers' and alerter's files as they grow (only the bytes
 * added since the last look are read): records so far, and the chains that ended (their last
 * step's effect, or a failure alert). The orchestrator uses it to know when to stop the faults.
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { alertsFile, effectsFile, type AlertRecord, type EffectRecord } from './protocol';

class Tail {
  private offset = 0;
  private rest = '';

  constructor(private readonly path: string) {}

  /** The complete lines added since the last call. */
  lines(): string[] {
    if (!existsSync(this.path)) return [];
    const fd = openSync(this.path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buffer = Buffer.alloc(size - this.offset);
      readSync(fd, buffer, 0, buffer.length, this.offset);
      this.offset = size;
      const text = this.rest + buffer.toString('utf8');
      const lines = text.split('\n');
      this.rest = lines.pop() ?? '';
      return lines.filter((l) => l.trim() !== '');
    } finally {
      closeSync(fd);
    }
  }
}

export class Progress {
  /** Effects and alerts recorded so far. */
  records = 0;
  private readonly ended = new Set<string>();
  private readonly effects: Tail[];
  private readonly alerts: Tail[];

  /** `names`: the run's chains (children of fan-outs, whose records are in the same files, are not counted). */
  constructor(dir: string, workers: number, private readonly steps: number, private readonly names: ReadonlySet<string>) {
    this.effects = Array.from({ length: workers }, (_, slot) => new Tail(effectsFile(dir, slot)));
    this.alerts = Array.from({ length: workers }, (_, slot) => new Tail(alertsFile(dir, slot)));
  }

  /** Reads what was added; returns how many chains ended so far. */
  update(): number {
    for (const tail of this.effects) {
      for (const line of tail.lines()) {
        const e = parse<EffectRecord>(line);
        if (!e) continue;
        this.records++;
        if (e.seq === this.steps && this.names.has(e.key)) this.ended.add(e.key);
      }
    }
    for (const tail of this.alerts) {
      for (const line of tail.lines()) {
        const a = parse<AlertRecord>(line);
        if (!a) continue;
        this.records++;
        if (a.reason === 'failure' && this.names.has(a.key)) this.ended.add(a.key);
      }
    }
    return this.ended.size;
  }
}

function parse<T>(line: string): T | undefined {
  try {
    return JSON.parse(line) as T;
  } catch {
    return undefined;
  }
}

/**
 * An append-only file of JSON lines, each flushed to disk (fsync) before `append` resolves. Lines
 * appended while a flush runs are written and flushed together by the next one (group commit), so
 * many handlers can record at once without waiting for each other's fsync in turn.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { readFileSync } from 'node:fs';

export class AppendLog {
  private waiting: { line: string; done: () => void; failed: (error: unknown) => void }[] = [];
  private flushing = false;

  private constructor(private readonly file: FileHandle) {}

  /** Opens (creating if needed) a file to append to. */
  static async open(path: string): Promise<AppendLog> {
    return new AppendLog(await open(path, 'a'));
  }

  /** Appends one JSON line; resolves once it is on disk. */
  append(record: object): Promise<void> {
    return new Promise((done, failed) => {
      this.waiting.push({ line: `${JSON.stringify(record)}\n`, done, failed });
      if (!this.flushing) void this.flush();
    });
  }

  async close(): Promise<void> {
    await this.file.close();
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.waiting.length > 0) {
      const batch = this.waiting;
      this.waiting = [];
      try {
        await this.file.appendFile(batch.map((w) => w.line).join(''));
        await this.file.datasync();
        for (const w of batch) w.done();
      } catch (error) {
        for (const w of batch) w.failed(error);
      }
    }
    this.flushing = false;
  }
}

/** Reads the complete JSON lines of a file (a torn last line, from a process killed mid-write, is skipped). */
export function readLines<T>(path: string): T[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // torn line
    }
  }
  return out;
}

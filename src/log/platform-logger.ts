/**
 * The default logger, fit for where it runs: on Cloud Run and App Engine (or when asked) one JSON
 * object per line with `severity`, `message` and the fields, which Cloud Logging parses into a
 * structured entry; elsewhere one readable line per message.
 */
import { rejectUnknownOptions, type OptionNames } from '../config/option-names';
import type { Logger } from '../types';

/** How the default logger writes: `json` lines, readable `text`, or `auto` (JSON on Cloud Run and App Engine). */
export type LogFormat = 'auto' | 'json' | 'text';

/** The log formats, for checking options. */
export const LOG_FORMATS: readonly LogFormat[] = ['auto', 'json', 'text'];

/** Options of `platformLogger`. */
export interface PlatformLoggerOptions {
  /** `json`, `text`, or `auto`: JSON when `K_SERVICE` (Cloud Run) or `GAE_SERVICE` (App Engine) is set. Defaults to `auto`. */
  format?: LogFormat;
  /** Where lines go. Defaults to stdout for info and stderr for warnings and errors. */
  write?: (line: string, level: LogLevel) => void;
  /** The environment `auto` looks at. Defaults to `process.env`. */
  env?: Record<string, string | undefined>;
}

/** Every option name of {@link PlatformLoggerOptions}. */
const OPTION_NAMES: OptionNames<PlatformLoggerOptions> = { format: true, write: true, env: true };

/** A logger method's level. */
export type LogLevel = 'info' | 'warn' | 'error';

/** Cloud Logging's severity for each level. */
const SEVERITY: Record<LogLevel, string> = { info: 'INFO', warn: 'WARNING', error: 'ERROR' };

/** Whether the environment is Cloud Run or App Engine, where stdout lines are parsed as JSON. */
export function onGooglePlatform(env: Record<string, string | undefined> = process.env): boolean {
  return Boolean(env.K_SERVICE || env.GAE_SERVICE);
}

/** The format `auto` resolves to in `env`. */
export function resolveLogFormat(format: LogFormat, env: Record<string, string | undefined> = process.env): 'json' | 'text' {
  if (format !== 'auto') return format;
  return onGooglePlatform(env) ? 'json' : 'text';
}

/** A logger writing JSON lines on Google's platforms (or when asked) and readable lines elsewhere. */
export function platformLogger(options: PlatformLoggerOptions = {}): Logger {
  rejectUnknownOptions('platformLogger', options, OPTION_NAMES);
  const format = resolveLogFormat(options.format ?? 'auto', options.env ?? process.env);
  const write = options.write ?? writeToConsole;
  const render = format === 'json' ? jsonLine : textLine;
  const log = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => write(render(level, message, fields), level);
  return { info: log('info'), warn: log('warn'), error: log('error') };
}

/**
 * One JSON object: `severity`, `message`, then the fields (a field named like either is kept under
 * `fields.<name>`). Errors become their stack, bigints their digits, cycles `[circular]`.
 */
export function jsonLine(level: LogLevel, message: string, fields?: Record<string, unknown>): string {
  const entry: Record<string, unknown> = { severity: SEVERITY[level], message, logger: 'datastore-locker' };
  for (const [name, value] of Object.entries(fields ?? {})) {
    if (value === undefined) continue;
    entry[name in entry ? `fields.${name}` : name] = value;
  }
  return safeStringify(entry);
}

/** One readable line: `datastore-locker: message {fields}`. */
export function textLine(_level: LogLevel, message: string, fields?: Record<string, unknown>): string {
  const shown = fields && Object.values(fields).some((v) => v !== undefined) ? ` ${safeStringify(fields)}` : '';
  return `datastore-locker: ${message}${shown}`;
}

function writeToConsole(line: string, level: LogLevel): void {
  if (level === 'info') process.stdout.write(`${line}\n`);
  else process.stderr.write(`${line}\n`);
}

/** JSON that never throws: Errors, bigints, Dates and cycles are written as text. */
function safeStringify(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_name, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error) return v.stack ?? `${v.name}: ${v.message}`;
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[circular]';
      seen.add(v);
    }
    return v;
  });
}

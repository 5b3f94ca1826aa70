// The default logger: JSON lines with severity on Cloud Run and App Engine (or when asked), a
// readable line elsewhere; never throws on odd fields. The Locker picks it from the environment,
// checked in a child process whose stdout and stderr are read as Cloud Logging would.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { platformLogger, type LogLevel } from '../../src/log/platform-logger';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { ConfigError } from '../../src/errors/errors';

const run = promisify(execFile);

function capture(format: 'auto' | 'json' | 'text', env: Record<string, string | undefined> = {}) {
  const lines: Array<{ line: string; level: LogLevel }> = [];
  const logger = platformLogger({ format, env, write: (line, level) => lines.push({ line, level }) });
  return { logger, lines };
}

describe('platformLogger', () => {
  it('writes one JSON object per line with severity, message and the fields', () => {
    const { logger, lines } = capture('json');
    logger.info('task dropped', { key: 'Order:1', seq: 2 });
    logger.warn('stale lease overwritten', { leaseAgeMs: 61_000 });
    logger.error('step failed for good', { retries: 10 });
    assert.deepEqual(lines.map((l) => l.level), ['info', 'warn', 'error']);
    const parsed = lines.map((l) => JSON.parse(l.line) as Record<string, unknown>);
    assert.deepEqual(parsed[0], { severity: 'INFO', message: 'task dropped', logger: 'datastore-locker', key: 'Order:1', seq: 2 });
    assert.equal(parsed[1]!.severity, 'WARNING');
    assert.equal(parsed[1]!.leaseAgeMs, 61_000);
    assert.equal(parsed[2]!.severity, 'ERROR');
    for (const { line } of lines) assert.ok(!line.includes('\n'), 'one line per message');
  });

  it('keeps a field named like severity or message without overriding them', () => {
    const { logger, lines } = capture('json');
    logger.info('real message', { message: 'field', severity: 'DEBUG' });
    const entry = JSON.parse(lines[0]!.line) as Record<string, unknown>;
    assert.equal(entry.message, 'real message');
    assert.equal(entry.severity, 'INFO');
    assert.equal(entry['fields.message'], 'field');
    assert.equal(entry['fields.severity'], 'DEBUG');
  });

  it('never throws on bigints, errors, cycles or line breaks', () => {
    const { logger, lines } = capture('json');
    const cycle: Record<string, unknown> = { name: 'loop' };
    cycle.self = cycle;
    const error = new Error('boom\nsecond line');
    logger.error('odd fields', { big: 2n ** 63n - 1n, error, cycle, at: new Date(0), skipped: undefined });
    const entry = JSON.parse(lines[0]!.line) as Record<string, unknown>;
    assert.equal(entry.big, '9223372036854775807');
    assert.match(String(entry.error), /^Error: boom\nsecond line\n {4}at /);
    assert.deepEqual(entry.cycle, { name: 'loop', self: '[circular]' });
    assert.equal(entry.at, '1970-01-01T00:00:00.000Z');
    assert.ok(!('skipped' in entry));
    assert.ok(!lines[0]!.line.includes('\n'));
  });

  it('writes readable text elsewhere', () => {
    const { logger, lines } = capture('text');
    logger.warn('handler failed', { seq: 3 });
    logger.info('sweep done');
    assert.equal(lines[0]!.line, 'datastore-locker: handler failed {"seq":3}');
    assert.equal(lines[1]!.line, 'datastore-locker: sweep done');
  });

  it('auto means JSON on Cloud Run (K_SERVICE) and App Engine (GAE_SERVICE), text elsewhere', () => {
    for (const [env, json] of [[{ K_SERVICE: 'orders' }, true], [{ GAE_SERVICE: 'default' }, true], [{}, false], [{ K_SERVICE: '' }, false]] as const) {
      const { logger, lines } = capture('auto', env);
      logger.info('hello', { a: 1 });
      assert.equal(lines[0]!.line.startsWith('{'), json, JSON.stringify(env));
    }
  });
});

describe('the Locker\'s default logger', () => {
  const script = [
    "const { Locker } = require('./src/locker');",
    "const { MemoryStore } = require('./src/store/memory/store');",
    "const format = process.env.TEST_LOG_FORMAT || undefined;",
    "const locker = new Locker({ store: new MemoryStore(), authenticate: false, logFormat: format });",
    "locker.config.logger.info('from the locker', { seq: 1 });",
    "locker.config.logger.error('went wrong', { seq: 2 });",
  ].join('\n');
  const child = async (env: Record<string, string>) => {
    const clean = { ...process.env };
    delete clean.K_SERVICE;
    delete clean.GAE_SERVICE;
    return run(process.execPath, ['--import', 'tsx', '-e', script], { env: { ...clean, ...env }, cwd: process.cwd() });
  };

  it('writes JSON lines that Cloud Logging parses on Cloud Run: info to stdout, errors to stderr', async () => {
    const { stdout, stderr } = await child({ K_SERVICE: 'orders', K_REVISION: 'orders-00001' });
    assert.deepEqual(JSON.parse(stdout.trim()), { severity: 'INFO', message: 'from the locker', logger: 'datastore-locker', seq: 1 });
    assert.deepEqual(JSON.parse(stderr.trim()), { severity: 'ERROR', message: 'went wrong', logger: 'datastore-locker', seq: 2 });
  });

  it('writes JSON lines on App Engine', async () => {
    const { stdout } = await child({ GAE_SERVICE: 'default' });
    assert.equal((JSON.parse(stdout.trim()) as { severity: string }).severity, 'INFO');
  });

  it('stays readable elsewhere, and writes JSON when asked', async () => {
    const local = await child({});
    assert.equal(local.stdout.trim(), 'datastore-locker: from the locker {"seq":1}');
    const asked = await child({ TEST_LOG_FORMAT: 'json' });
    assert.equal((JSON.parse(asked.stdout.trim()) as { message: string }).message, 'from the locker');
  });

  it('refuses an unknown logFormat with a sentence', () => {
    assert.throws(
      () => new Locker({ store: new MemoryStore(), authenticate: false, logFormat: 'yaml' as 'json' }),
      (e: unknown) => e instanceof ConfigError && /logFormat must be one of auto, json, text; got "yaml"/.test(e.message),
    );
  });
});

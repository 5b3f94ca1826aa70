/**
 * Numbers and facts the pages state, against the code they come from: the version the Cloud Run
 * guide asks for, the batch size of `scheduleMany()`, the recovery time, the longest step, the
 * dispatch-deadline rule, the sweep's URL, `formatAlert`'s options. Each check failed against the
 * pages as they were before issue 24's corrections.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULTS } from '../../src/config/options';
import { DEFAULT_REQUEST_TIMEOUT, stepTimes } from '../../src/config/time-limits';
import { BATCH, PARALLEL_BATCHES } from '../../src/chain/schedule-many';
import { MAX_ERROR_LENGTH } from '../../src/errors/error-text';
import { MIN_SCRUB_LENGTH } from '../../src/alert/redact';
import { ERROR_LINE_MAX } from '../../src/ops/inspect/step-view';
import { ENTRY_MAX_BYTES, HISTORY_MAX_BYTES, HISTORY_STEPS, ROUTE_MAX_CHARS, encodeEntry } from '../../src/rules/step-history';
import { THROUGHPUT_CAP } from '../../src/ops/inspect/inspector';
import { docBlocks, docPages, ROOT } from '../support/doc-blocks';

const read = (page: string): string => readFileSync(join(ROOT, page), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string };
const prose = (page: string): string => read(page).replace(/```[\s\S]*?```/g, '').replace(/\s+/g, ' ');
const seconds = (ms: number): string => (ms / 1000).toLocaleString('en-US');

describe('numbers the docs state, from the code', () => {
  it('the chain history\'s size and the picture\'s bound, as operating.md, storage.md and design.md state them', () => {
    const typical = Buffer.byteLength(`${encodeEntry({ seq: 12, outcome: 'next', route: '/step', startedAt: new Date(1_772_359_200_000), tookMs: 250, attempts: 1, takeover: false })}\n`);
    const operating = prose('docs/guides/operating.md');
    assert.ok(operating.includes(`the last **${HISTORY_STEPS} steps**, a line each, about **${typical} bytes** for a step on a 5-character route (${typical * HISTORY_STEPS} bytes for ten), at most ${ENTRY_MAX_BYTES} bytes per step (a route is cut to ${ROUTE_MAX_CHARS} printable ASCII characters) and **${HISTORY_MAX_BYTES.toLocaleString('en-US')} bytes** in all`));
    assert.ok(operating.includes(`at most \`cap\` each (${THROUGHPUT_CAP.toLocaleString('en-US')} by default`));
    for (const page of ['docs/reference/storage.md', 'docs/design.md']) {
      assert.ok(prose(page).includes(`last ${HISTORY_STEPS} steps`) && prose(page).includes(`at most ${HISTORY_MAX_BYTES.toLocaleString('en-US')} bytes`), page);
    }
  });

  it('the Cloud Run guide asks for a version range that reaches this version, on a pinned Node', () => {
    const json = docBlocks('docs/guides/deploy-cloud-run.md', 'json').map((b) => JSON.parse(b.code) as { dependencies?: Record<string, string>; engines?: { node?: string } }).find((j) => j.dependencies);
    const range = json?.dependencies?.['datastore-locker'];
    const [major, minor] = pkg.version.split('.');
    assert.equal(range, major === '0' ? `^0.${minor}.0` : `^${major}.0.0`, `"^" reaches ${pkg.version}`);
    assert.doesNotMatch(json?.engines?.node ?? '', />/, 'no ">" range: the buildpack would pick an untested major');
  });

  it('scheduleMany() batches as the pages say', () => {
    for (const page of ['docs/reference/handler-context.md', 'docs/guides/bulk-kickoff.md', 'docs/guides/limits.md']) {
      assert.match(prose(page), new RegExp(`batches of ${BATCH}\\b|${BATCH} items|for ${BATCH} entities`), `${page} gives ${BATCH}`);
    }
    assert.match(prose('docs/reference/handler-context.md'), new RegExp(`eight at a time`));
    assert.equal(PARALLEL_BATCHES, 8);
    assert.doesNotMatch(prose('docs/reference/handler-context.md'), /lookups of up to 1,000 keys/);
  });

  it('security.md gives the cuts redact scrubs before, and the shortest value it scrubs, as the code has them', () => {
    const page = prose('docs/concepts/security.md');
    assert.match(page, new RegExp(`at ${ERROR_LINE_MAX} characters`), `the list's line: ${ERROR_LINE_MAX}`);
    assert.match(page, new RegExp(`cut at ${MAX_ERROR_LENGTH / 1024} KiB`), `the stored error: ${MAX_ERROR_LENGTH / 1024} KiB`);
    assert.match(page, new RegExp(`\\(${MIN_SCRUB_LENGTH} characters or more\\)`), `the start of a secret: ${MIN_SCRUB_LENGTH} characters or more`);
    assert.match(page, new RegExp(`shorter than ${MIN_SCRUB_LENGTH} characters in free text \\(nor the first ${MIN_SCRUB_LENGTH - 1} characters`));
  });

  it('the README and no-step-is-lost give one recovery time: stallAfter plus a sweep every minute', () => {
    const minutes = (DEFAULTS.stallAfter + 60_000) / 60_000;
    for (const page of ['README.md', 'docs/concepts/no-step-is-lost.md', 'docs/guides/limits.md']) {
      assert.match(prose(page), new RegExp(`\\(${minutes} min(utes)? by default`), `${page} says ${minutes} min`);
    }
  });

  it('the longest step is requestTimeout minus the margin, not leaseTimeout', () => {
    const byDefault = seconds(stepTimes(DEFAULT_REQUEST_TIMEOUT).stepLimit);
    const cloudRunMax = seconds(stepTimes(1_800_000).stepLimit);
    const appEngine = seconds(stepTimes(600_000).stepLimit);
    for (const page of ['docs/guides/chains.md', 'docs/guides/limits.md']) {
      assert.match(prose(page), new RegExp(`${byDefault} s by default`), `${page}: ${byDefault} s`);
      assert.match(prose(page), new RegExp(`${cloudRunMax} s`), `${page}: ${cloudRunMax} s on Cloud Run at most`);
    }
    assert.match(prose('docs/guides/limits.md'), new RegExp(`${appEngine} s with automatic scaling`));
    assert.doesNotMatch(prose('docs/guides/chains.md'), /`leaseTimeout` \([^)]*\) is the longest an attempt runs/);
  });

  it('states one dispatch-deadline rule, at least requestTimeout, on every page', () => {
    const below = docPages().filter((page) => /dispatch deadline[^.]*(below|shorter than) `leaseTimeout`|keep it below `leaseTimeout`/i.test(prose(page)));
    assert.deepEqual(below, []);
    for (const page of ['docs/guides/deploying.md', 'docs/reference/options.md', 'docs/concepts/shutdown-and-time-limits.md']) {
      assert.match(prose(page), /at least (the Locker's )?`requestTimeout`/, page);
    }
    assert.doesNotMatch(prose('docs/guides/deploy-app-engine.md'), /at most 30 minutes/, 'App Engine targets take up to 24 h');
    // A CloudTasksQueue brings no authenticator: { store, queue } alone throws ConfigError.
    assert.doesNotMatch(prose('docs/concepts/shutdown-and-time-limits.md'), /`new Locker\(\{ store, queue \}\)` works/);
  });

  it('gives the sweep URL cron.yaml calls, and formatAlert its required options', () => {
    const cron = /url: (\S+)/.exec(read('cron.yaml'))?.[1];
    assert.ok(cron);
    assert.match(prose('docs/guides/deploying.md'), new RegExp(`GET ${cron}\``));
    assert.doesNotMatch(prose('docs/guides/deploying.md'), /\/cron\/sweep/);
    for (const page of docPages()) assert.doesNotMatch(prose(page), /formatAlert\(event, options\?\)/, page);
  });
});

/**
 * The fuzz: many generated requests, from a seeded generator, against `handle()` on a real
 * emulator, with authentication on (the chaos secret, and the local dispatcher's signature) and
 * off. Among them, crafted cases with an exact expected answer: a signed request replayed on
 * another route, with another body, step, chain, send or a pushed-back expiry (401), or after it
 * expired (401); a task whose route or body is not its step's ledger record's, with or without
 * `X-Lock-Chain` (400); bodies nesting deeper than the limit, and bodies over `maxBodyBytes` (400). The entities it aims at can never
 * be taken (finished, failed, held by a lease that stays fresh, missing), so whatever arrives, the
 * rules are: no 5xx except the documented 503 (a step whose lease another attempt holds), no
 * crash, no handler run, no store write (counted by a store wrapper), and a heap that stays flat.
 */
import { createHash } from 'node:crypto';
import { Agent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import express from 'express';
import type { Datastore, Key } from '@google-cloud/datastore';
import { DatastoreStore, decodeKey, encodeKey, keyPath, Locker, type Properties } from '../src/index';
import { CountingStore, type StoreCounts } from './counting-store';
import { secretAuthenticator, SECRET_HEADER } from './dispatcher-queue';
import { Rng } from './random';
import { localAuthenticator, signedHeaders, LOCAL_SIGNATURE_TTL_MS } from '../src/queue/local-signature';
import { taskName } from '../src/rules/ledger-record';
import { MAX_JSON_DEPTH } from '../src/http/json-depth';
import { bulkCases, OPS, operatorAuth, seedOperation } from './fuzz-bulk';

/** What a fuzz run found. */
export interface FuzzReport {
  seed: number;
  requests: number;
  withAuth: number;
  withoutAuth: number;
  /** Crafted cases sent (each with its one right answer), by what they are. */
  crafted: Record<string, number>;
  /** Answers by status. */
  statuses: Record<string, number>;
  /** Requests the server never answered (the connection broke). */
  unanswered: number;
  /** Answers that broke a rule, with the request that got them (at most 20 kept). */
  unexpected: string[];
  unexpectedCount: number;
  handlerRuns: number;
  uncaughtErrors: number;
  store: StoreCounts;
  heapBeforeBytes: number;
  heapAfterBytes: number;
  heapGrowthBytes: number;
  wallMs: number;
}

/** The entities requests aim at, and the one step that may be answered 503. */
const KIND = 'Fuzzed';
const HELD_SEQ = 2;
const HELD_CHAIN = 'chainA';
/** The held step's route and body, as its ledger record has them. */
const HELD_PATH = '/signed/step';
const HELD_BODY = '{"n":1}';
const MAX_BODY = 64 * 1024;

interface Target {
  key: Key;
  props?: Properties;
}

/** Runs `requests` generated requests (after a warm-up of `warmup`) against both routes. */
export async function runFuzz(datastore: Datastore, namespace: string, seed: number, requests: number, warmup = 2_000, concurrency = 32): Promise<FuzzReport> {
  const started = Date.now();
  const targets = await seedTargets(datastore, namespace);
  await seedOperation(datastore, namespace, KIND);
  const store = new CountingStore(new DatastoreStore(datastore));
  const secret = 'fuzz-secret-0123456789';
  let handlerRuns = 0;
  const handler = async (): Promise<void> => {
    handlerRuns++;
  };
  const factory = (props: Properties): Properties => props;
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const withAuth = new Locker({ store, authenticate: secretAuthenticator(secret), logger: quiet });
  const withoutAuth = new Locker({ store, authenticate: false, logger: quiet });
  const signed = new Locker({ store, authenticate: localAuthenticator(secret), logger: quiet });
  const app = express();
  app.post('/auth/step', withAuth.handle(handler, factory, { maxBodyBytes: MAX_BODY }));
  app.post('/signed/step', signed.handle(handler, factory, { maxBodyBytes: MAX_BODY }));
  app.post('/signed/other', signed.handle(handler, factory, { maxBodyBytes: MAX_BODY }));
  app.post('/open/step', withoutAuth.handle(handler, factory, { maxBodyBytes: MAX_BODY }));
  // The status router's bulk routes: forged confirmations, bad filters, replayed operation ids (chaos/fuzz-bulk.ts).
  app.use(OPS, withoutAuth.statusRouter({ authenticate: operatorAuth, kinds: [KIND], namespaces: [namespace] }));
  app.all('/{*rest}', withoutAuth.handle(handler, factory, { maxBodyBytes: MAX_BODY })); // any method, any path
  let uncaught = 0;
  const onUncaught = (): void => void uncaught++;
  process.on('uncaughtException', onUncaught).on('unhandledRejection', onUncaught);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const rng = new Rng(seed);
  const report: FuzzReport = {
    seed, requests, withAuth: 0, withoutAuth: 0, crafted: {}, statuses: {}, unanswered: 0, unexpected: [], unexpectedCount: 0,
    handlerRuns: 0, uncaughtErrors: 0, store: store.counts, heapBeforeBytes: 0, heapAfterBytes: 0, heapGrowthBytes: 0, wallMs: 0,
  };
  try {
    await send(warmup, concurrency, () => generate(rng, targets, secret, namespace), port, agent, () => undefined);
    const gc = forceGc();
    gc();
    report.heapBeforeBytes = process.memoryUsage().heapUsed;
    const before = { ...store.counts };
    await send(requests, concurrency, () => generate(rng, targets, secret, namespace), port, agent, (req, status, retryAfter) => judgeAnswer(report, req, status, retryAfter));
    gc();
    report.heapAfterBytes = process.memoryUsage().heapUsed;
    report.heapGrowthBytes = report.heapAfterBytes - report.heapBeforeBytes;
    report.store = { reads: store.counts.reads - before.reads, transactions: store.counts.transactions - before.transactions, writes: store.counts.writes };
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    process.off('uncaughtException', onUncaught).off('unhandledRejection', onUncaught);
  }
  report.handlerRuns = handlerRuns;
  report.uncaughtErrors = uncaught;
  report.wallMs = Date.now() - started;
  return report;
}

/** A request to send, with what may be answered. */
interface Generated {
  method: string;
  path: string;
  headers: OutgoingHttpHeaders;
  body: Buffer;
  auth: boolean;
  /** Whether a 503 is the documented answer (a well-formed task for the held step). */
  may503: boolean;
  /** A crafted case's only right answers, and what it is. */
  expect?: { statuses: readonly number[]; what: string };
}

function judgeAnswer(report: FuzzReport, req: Generated, status: number | undefined, retryAfter: string | undefined): void {
  if (req.auth) report.withAuth++;
  else report.withoutAuth++;
  if (req.expect) {
    const kind = req.expect.what.replace(/\d+ levels/, 'N levels');
    report.crafted[kind] = (report.crafted[kind] ?? 0) + 1;
  }
  const name = status === undefined ? 'none' : String(status);
  report.statuses[name] = (report.statuses[name] ?? 0) + 1;
  let problem: string | undefined;
  if (status === undefined) {
    report.unanswered++;
    problem = 'no answer';
  } else if (status === 503 && !(req.may503 && retryAfter !== undefined)) {
    problem = '503 for a request that is not a task of the held step';
  } else if (status >= 500 && status !== 503) {
    problem = `${status}`;
  } else if (req.expect && !req.expect.statuses.includes(status)) {
    problem = `${status} for ${req.expect.what} (expected ${req.expect.statuses.join(' or ')})`;
  }
  if (!problem) return;
  report.unexpectedCount++;
  if (report.unexpected.length < 20) {
    report.unexpected.push(`${problem}: ${req.method} ${req.path} ${JSON.stringify(req.headers).slice(0, 400)} body ${req.body.length} bytes`);
  }
}

/** Writes the entities requests aim at: a finished chain, a failed step, a step held by a lease that stays fresh. */
async function seedTargets(datastore: Datastore, namespace: string): Promise<Target[]> {
  const key = (name: string): Key => datastore.key({ namespace, path: [KIND, name] });
  const farFuture = new Date(Date.now() + 24 * 3600 * 1000);
  const lock = (seq: number, state: string, req: string, ts: Date, task = 'task'): Properties => ({
    lock_seq: seq, lock_state: state, lock_req: req, lock_try: 0, lock_ts: ts, lock_chain: 'chainA', lock_task: task, value: 1,
  });
  const heldKey = key('held');
  const heldRecord = taskName(heldKey, HELD_CHAIN, HELD_SEQ);
  const targets: Target[] = [
    { key: key('finished'), props: lock(5, 'complete', '', new Date()) },
    { key: key('failed'), props: lock(3, 'failed', '', new Date()) },
    { key: heldKey, props: lock(HELD_SEQ, 'scheduled', 'holder-attempt', farFuture, heldRecord) },
    { key: key('missing') },
    { key: datastore.key({ namespace, path: [KIND, 'held', 'Child', 7] }) },
    { key: datastore.key({ namespace: `${namespace}-other`, path: [KIND, 'held'] }) },
  ];
  await datastore.save(targets.flatMap((t) => (t.props ? [{ key: t.key, data: t.props }] : [])));
  // The held step's ledger record, as a kickoff writes it: tasks are checked against its route and body.
  const now = new Date();
  await new DatastoreStore(datastore).transaction(async (tx) => tx.putLedger({
    id: heldRecord, key: heldKey, seq: HELD_SEQ, chain: HELD_CHAIN, path: HELD_PATH, body: HELD_BODY, createdAt: now,
    task: heldRecord, sends: 1, sentAt: now, failures: 0, due: farFuture,
  }));
  return targets;
}

const PRINTABLE = ' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~';
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function text(rng: Rng, alphabet: string, maxLength: number): string {
  let out = '';
  for (let n = rng.int(0, maxLength); n > 0; n--) out += alphabet[rng.int(0, alphabet.length - 1)];
  return out;
}

/** One generated request: now and then a crafted case (one in ten), and a bulk case (one in forty). */
function generate(rng: Rng, targets: readonly Target[], secret: string, namespace: string): Generated {
  const r = rng.next();
  if (r < 0.025) return bulkCase(rng, namespace);
  return r < 0.1 ? crafted(rng, targets, secret) : random(rng, targets, secret);
}

/** A bulk case to the status router, with its one right answer. */
function bulkCase(rng: Rng, namespace: string): Generated {
  const c = pickWeighted(rng, bulkCases(rng, KIND, namespace));
  return { method: c.method, path: c.path, headers: c.headers, body: c.body, auth: true, may503: false, expect: { statuses: c.statuses, what: c.what } };
}

/**
 * A crafted request for the held step (whose lease stays held, so nothing runs) with its one right
 * answer: signed and replayed elsewhere, bound to another route or body than its ledger record's,
 * nested too deep, or too large.
 */
function crafted(rng: Rng, targets: readonly Target[], secret: string): Generated {
  const held = targets.find((t) => t.props?.lock_req === 'holder-attempt')!;
  const lockHeaders: Record<string, string> = {
    'x-lock-key': encodeKey(held.key, 'locker-fuzz'), 'x-lock-seq': String(HELD_SEQ), 'x-lock-chain': HELD_CHAIN,
    'x-cloudtasks-taskname': String(held.props!.lock_task), 'content-type': 'application/json',
  };
  const sign = (now = Date.now()) => ({ ...lockHeaders, ...signedHeaders(secret, { path: HELD_PATH, headers: lockHeaders, body: HELD_BODY }, now) });
  const req = (what: string, statuses: number[], path: string, headers: OutgoingHttpHeaders, body: string | Buffer): Generated => ({
    method: 'POST', path, headers, body: Buffer.isBuffer(body) ? body : Buffer.from(body), auth: path.startsWith('/signed'),
    may503: statuses.includes(503), expect: { statuses, what },
  });
  const other = JSON.stringify({ n: rng.int(2, 9) });
  const { 'x-lock-chain': _chain, ...noChain } = lockHeaders;
  const depth = rng.int(MAX_JSON_DEPTH + 1, 20_000);
  // Refused as not its step's (400) when the record is read; a lease seen held moments ago is
  // answered 503 from memory before any read (seen-steps.ts): either way nothing runs.
  const UNBOUND = [400, 503];
  return pickWeighted<Generated>(rng, [
    [1, () => req('the genuine signed task of the held step', [503], HELD_PATH, sign(), HELD_BODY)],
    [1, () => req('a signature replayed on another route', [401], '/signed/other', sign(), HELD_BODY)],
    // The signature binds the body: refused (401) once the body is read, before the store (or the duplicate cache) is asked.
    [1, () => req('a signature replayed with another body (the body is not the one signed)', [401], HELD_PATH, sign(), other)],
    [1, () => req('a signature replayed with another body and its hash', [401], HELD_PATH, { ...sign(), 'x-locker-body-sha256': createHash('sha256').update(other).digest('hex') }, other)],
    [1, () => req('a signature replayed for another step', [401], HELD_PATH, { ...sign(), 'x-lock-seq': String(HELD_SEQ + 1) }, HELD_BODY)],
    [1, () => req('a signature replayed for another chain', [401], HELD_PATH, { ...sign(), 'x-lock-chain': 'chainB' }, HELD_BODY)],
    [1, () => req('a signature replayed as another send', [401], HELD_PATH, { ...sign(), 'x-lock-send': '2' }, HELD_BODY)],
    [1, () => req('a signature with its expiry pushed back', [401], HELD_PATH, { ...sign(), 'x-locker-expires': String(Math.ceil(Date.now() / 1000) + 86_400) }, HELD_BODY)],
    [1, () => req('an expired signature', [401], HELD_PATH, sign(Date.now() - LOCAL_SIGNATURE_TTL_MS - 2_000), HELD_BODY)],
    [1, () => req('a task on another route than its step\'s', UNBOUND, '/open/step', lockHeaders, HELD_BODY)],
    [1, () => req('a task with another body than its step\'s', UNBOUND, '/open/step', lockHeaders, other)],
    [1, () => req('a task without X-Lock-Chain, on another route', UNBOUND, '/open/step', noChain, HELD_BODY)],
    [1, () => req('a task without X-Lock-Chain, with another body', UNBOUND, HELD_PATH.replace('/signed', '/open'), noChain, other)],
    [1, () => req(`a body nesting ${depth} levels deep`, [400], '/open/step', lockHeaders, `${'['.repeat(depth)}${']'.repeat(depth)}`)],
    [1, () => req(`a body nesting ${depth} levels deep in an object`, [400], '/open/step', lockHeaders, `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)],
    [1, () => req('a body one byte over maxBodyBytes', [400], '/open/step', lockHeaders, Buffer.alloc(MAX_BODY + 1, 0x20))],
    [1, () => req('a body well over maxBodyBytes', [400], '/open/step', lockHeaders, Buffer.alloc(MAX_BODY + rng.int(40_000, 150_000), 0x20))],
  ]);
}

/** A request made of random parts. */
function random(rng: Rng, targets: readonly Target[], secret: string): Generated {
  const auth = rng.next() < 0.5;
  const target = rng.pick(targets);
  const encoded = encodeKey(target.key, 'locker-fuzz');
  const keyHeader = pickWeighted<string | string[] | undefined>(rng, [
    [6, () => encoded],
    [1, () => encoded.slice(0, rng.int(0, encoded.length))],
    [1, () => encoded.replace(/.$/, text(rng, BASE64URL, 1))],
    [1, () => text(rng, BASE64URL, 80)],
    [1, () => text(rng, PRINTABLE, 200)],
    [0.2, () => 'A'.repeat(rng.int(1_000, 9_000))],
    [0.5, () => undefined],
    [0.3, () => [encoded, encoded]],
  ]);
  const seq = pickWeighted<string | string[] | undefined>(rng, [
    [6, () => String(rng.int(1, 6))],
    [1, () => rng.pick(['0', '-1', '1.5', '1e3', ' 2', '2 ', '0x2', '\u00b2', '99999999999999999999', '', 'NaN'])],
    [1, () => text(rng, PRINTABLE, 20)],
    [0.5, () => undefined],
    [0.3, () => ['2', '3']],
  ]);
  const headers: OutgoingHttpHeaders = {};
  if (keyHeader !== undefined) headers['x-lock-key'] = keyHeader;
  if (seq !== undefined) headers['x-lock-seq'] = seq;
  if (rng.next() < 0.4) headers['x-lock-chain'] = rng.pick(['chainA', 'chainB', text(rng, PRINTABLE, 80), 'x'.repeat(65)]);
  if (rng.next() < 0.3) headers['x-cloudtasks-taskname'] = text(rng, PRINTABLE, 60);
  if (rng.next() < 0.3) headers['x-cloudtasks-taskretrycount'] = rng.pick(['0', '7', '-3', '1e9', text(rng, PRINTABLE, 12)]);
  if (rng.next() < 0.2) headers['x-cloudtasks-tasketa'] = rng.pick(['1700000000.5', 'soon', '-1', '99999999999999']);
  if (rng.next() < 0.2) headers['x-appengine-queuename'] = text(rng, PRINTABLE, 20);
  if (auth) {
    const r = rng.next();
    if (r < 0.5) headers[SECRET_HEADER] = secret;
    else if (r < 0.8) headers[SECRET_HEADER] = text(rng, PRINTABLE, 40);
    else if (r < 0.9) headers[SECRET_HEADER] = [secret, secret];
  }
  const body = pickWeighted<Buffer>(rng, [
    [3, () => Buffer.alloc(0)],
    [3, () => Buffer.from(JSON.stringify({ n: rng.int(0, 9), s: text(rng, PRINTABLE, 30) }))],
    [1, () => Buffer.from(text(rng, PRINTABLE, 200))],
    [1, () => Buffer.from(rng.pick(['null', '[]', '"x"', '1', '{"a":', '{"__proto__":{"x":1}}', '\u0000']))],
    [0.3, () => Buffer.alloc(MAX_BODY + rng.int(1, 40_000), 0x61)],
    [0.5, () => Buffer.from(Array.from({ length: rng.int(1, 300) }, () => rng.int(0, 255)))],
  ]);
  if (rng.next() < 0.7) headers['content-type'] = rng.pick(['application/json', 'text/plain', 'application/octet-stream', 'application/json; charset=latin1', text(rng, PRINTABLE, 30)]);
  const method = rng.next() < 0.9 ? 'POST' : rng.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
  const path = pickWeighted(rng, [
    [8, () => (auth ? '/auth/step' : '/open/step')],
    [1, () => `/${text(rng, BASE64URL, 20)}`],
    [0.5, () => `${auth ? '/auth/step' : '/open/step'}?${text(rng, BASE64URL, 20)}=%zz`],
  ]);
  // Node's parser trims header values ('2 ' arrives as '2'); a mutated key may still decode to the held one.
  const wellFormed = typeof seq === 'string' && seq.trim() === String(HELD_SEQ) && typeof keyHeader === 'string' && isHeld(keyHeader, targets);
  return { method, path, headers, body, auth, may503: wellFormed };
}

/** Whether an `X-Lock-Key` decodes to the entity whose step is held. */
function isHeld(header: string, targets: readonly Target[]): boolean {
  let key: Key;
  try {
    key = decodeKey(header);
  } catch {
    return false;
  }
  return targets.some((t) => t.props?.lock_req === 'holder-attempt' && keyPath(t.key) === keyPath(key) && t.key.namespace === key.namespace);
}

function pickWeighted<T>(rng: Rng, options: readonly [number, () => T][]): T {
  const total = options.reduce((sum, [w]) => sum + w, 0);
  let r = rng.next() * total;
  for (const [w, make] of options) {
    if ((r -= w) < 0) return make();
  }
  return options.at(-1)![1]();
}

/** Sends `count` requests, `concurrency` at a time; calls `judge` with each answer. */
async function send(
  count: number, concurrency: number, next: () => Generated, port: number, agent: Agent,
  judge: (req: Generated, status: number | undefined, retryAfter: string | undefined) => void,
): Promise<void> {
  let sent = 0;
  const lane = async (): Promise<void> => {
    while (sent < count) {
      sent++;
      const req = next();
      const answer = await once(req, port, agent);
      judge(req, answer?.status, answer?.retryAfter);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

function once(req: Generated, port: number, agent: Agent): Promise<{ status: number; retryAfter: string | undefined } | undefined> {
  return new Promise((resolve) => {
    const r = httpRequest({ host: '127.0.0.1', port, method: req.method, path: req.path, headers: { ...req.headers, 'content-length': String(req.body.length) }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
      res.on('error', () => resolve(undefined));
    });
    r.on('error', () => resolve(undefined));
    r.end(req.body);
  });
}

/** A full garbage collection, with `--expose-gc` or without. */
function forceGc(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

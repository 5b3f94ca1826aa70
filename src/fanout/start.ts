/**
 * `ctx.fanOut()`: starting the children, then the seal (docs/design.md, section 18).
 *
 * 1. The header is written `writing` (fenced on the parent's lease), or found so by a retried
 *    attempt: its id is derived from the parent's key, chain and step, so a retry resumes it.
 * 2. Children, a page of {@link PAGE_SIZE} at a time: the pending child records (records already
 *    there are kept), then the page record that lists them (a listed child with no record never
 *    started and does not count; a record no page lists is never read), then the children's kickoffs in one
 *    batch, each chain id derived from the fan-out and the child's key. A retried attempt finds
 *    the chains it started (the kickoff recognises its own chain) and never starts a child twice.
 *    Up to {@link PAGE_WINDOW} pages are under way at once, their page records written one at a
 *    time, in page order. A child whose entity is busy with another chain, or whose write the
 *    store refuses (not a store fault that may pass: that child is read and tried again, then the
 *    step retried), settles `failed` at once.
 * 3. The seal, fenced on the parent's lease, in one transaction: the header `sealed`, the parent's
 *    step finished and its join step scheduled with no ledger record yet (so no task runs it, and a
 *    kickoff on the parent finds it busy). Then the completion check runs, since every child may
 *    have finished already.
 */
import type { Key } from '@google-cloud/datastore';
import { rejectUnknownOptions } from '../config/option-names';
import { checkStep } from '../chain/next-step';
import { ConfigError, StoreUnavailableError, TransitionError } from '../errors/errors';
import type { Arrival } from '../step/arrival';
import { kickoffRounds, type KickoffJob, type KickoffMarking } from '../chain/kickoff-rounds';
import { scheduledStep, type NextStep } from '../rules/ledger-record';
import { fanOutRun } from '../rules/kickoff-plan';
import { checkDeliverable, decodeKey, keyPath } from '../keys/key-codec';
import { keyString } from '../keys/keys';
import type { Lease } from '../step/lease';
import type { LedgerRecord } from '../types';
import { checkJoin } from './join-trigger';
import { checkPolicy } from './policy';
import { getMany, pagesFrom, type FanParts } from './read-children';
import {
  childChain, childKey, childProperties, fanOutId, headerKey, PAGE_SIZE, PAGE_WINDOW, pageKey, readChild, readHeader, readPage, UNINDEXED, type Header,
} from './records';
import { settleRecord } from './settle';
import { writerOf } from './record-writer';
import { open } from './transitions';
import { FAN_OUT_OPTION_NAMES, type FanOutChild, type FanOutOptions, type FanOutStarted } from './types';

/** Child records per transaction: legacy Datastore takes at most 25 entity groups in one. */
const GROUPS = 20;

/** A child that passed its checks. */
interface Checked {
  child: FanOutChild;
  id: string;
  step: NextStep;
}

/** Starts every child, then seals; see the file's comment. Resolves once sealed (the step is then finished). */
export async function fanOut(
  parts: FanParts, a: Arrival, lease: Lease, children: Iterable<FanOutChild> | AsyncIterable<FanOutChild>, options: FanOutOptions,
  seal: (header: Header) => Promise<void>,
): Promise<FanOutStarted> {
  if (!parts.dispatcher.hasQueue) throw new ConfigError('fanOut() needs a queue: pass `queue` to the Locker.');
  if (typeof options !== 'object' || options === null) throw new TypeError('fanOut(children, { join, payload?, policy? }): options are required');
  rejectUnknownOptions('fanOut()', options, FAN_OUT_OPTION_NAMES);
  const joinStep = checkStep(parts, options.join, options.payload);
  const policy = checkPolicy(options.policy);
  if (children === null || typeof children !== 'object' || (!(Symbol.iterator in children) && !(Symbol.asyncIterator in children))) {
    throw new TypeError('fanOut(children): children must be an array, an iterable or an async iterable of { key, path, payload?, entity? }');
  }
  const header = await openHeader(parts, a, lease, joinStep, JSON.stringify(policy));
  const seen = new Set<string>();
  const kinds = new Set<string>();
  const result: FanOutStarted = { id: header.id, total: 0, started: 0, refused: 0, joinSeq: header.seq + 1 };
  let page: Checked[] = [];
  let n = 0;
  // Up to PAGE_WINDOW pages are written at once, page n only after page n - PAGE_WINDOW is done.
  const writing: Promise<void>[] = [];
  let listing: Promise<unknown> = Promise.resolve(); // the page transaction of the page before
  const next = async (): Promise<void> => {
    const earlier = writing[n - PAGE_WINDOW];
    if (earlier) await earlier;
    const listed = listing;
    let turn!: () => void;
    listing = new Promise<void>((resolve) => { turn = resolve; });
    const written = writePage(parts, header, n, page, result, { after: listed, done: turn });
    written.catch(() => undefined); // awaited below; a page that fails is not an unhandled rejection meanwhile
    writing[n++] = written;
    page = [];
  };
  let stopped: { error: unknown } | undefined;
  try {
    for await (const child of children as AsyncIterable<FanOutChild>) {
      page.push(checkChild(parts, header, child, seen, result.total));
      kinds.add(page.at(-1)!.child.key.kind);
      result.total++;
      if (page.length === PAGE_SIZE) await next();
    }
    if (page.length > 0 || n === 0) await next();
  } catch (error) {
    stopped = { error };
  }
  // Every page written or failed before the step goes on (to the seal, or out with an error): none is left running.
  const failed = (await Promise.allSettled(writing)).find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (stopped) throw stopped.error;
  if (failed) throw failed.reason;
  // Pages an earlier attempt wrote past this one's last (its source gave more children) are kept.
  n = await pagesFrom(parts, header.id, a.key.namespace, n);
  await seal({ ...header, pages: n, total: result.total, kinds: [...kinds].sort() });
  try {
    await checkJoin(parts, header.id, a.key.namespace); // every child may have settled before the seal
  } catch (error) {
    parts.config.logger.warn('fan-out sealed; its completion check failed and is left to the sweep', { fanout: header.id, error: String(error) });
  }
  return result;
}

/** Writes the header `writing`, fenced on the lease; or reads the one an earlier attempt of the step wrote. */
async function openHeader(parts: FanParts, a: Arrival, lease: Lease, join: NextStep, policy: string): Promise<Header> {
  const now = new Date(parts.config.clock());
  return lease.fenced(async (tx, _props, lock) => {
    if (!lock.chain) throw new TypeError('fanOut(): the parent\'s chain has no id (a step the Go library scheduled); start it with locker.schedule()');
    const id = fanOutId(a.key, lock.chain, a.seq);
    const found = readHeader(id, await tx.get(headerKey(id, a.key.namespace)), decodeKey);
    if (found) return found;
    const planned = scheduledStep(a.key, lock, lock.chain, join, now);
    const header = open({
      id, parent: a.key, chain: lock.chain, seq: a.seq, joinTask: planned.record.id, path: join.path, body: join.body, policy, now,
      stallAfter: parts.config.stallAfter,
    });
    writerOf(parts).header(tx, header);
    return header;
  }) as unknown as Promise<Header>;
}

/** Checks one child; throws a `TypeError` saying which and why (nothing of it is written). */
function checkChild(parts: FanParts, header: Header, child: FanOutChild, seen: Set<string>, index: number): Checked {
  if (typeof child !== 'object' || child === null) throw new TypeError(`fanOut(): child ${index} must be { key, path, payload?, entity? }`);
  let id: string;
  try {
    id = keyString(child.key);
    checkDeliverable(child.key, parts.config.keyAppId);
  } catch (error) {
    throw new TypeError(`fanOut(): child ${index}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if ((child.key.namespace ?? '') !== (header.parent.namespace ?? '')) {
    throw new TypeError(`fanOut(): child ${index} (${keyPath(child.key)}) is in another namespace than its parent; a fan-out's children live in its parent's namespace`);
  }
  if (seen.has(id)) throw new TypeError(`fanOut(): child ${index} names ${keyPath(child.key)} again; each entity may be a child once per fan-out`);
  seen.add(id);
  const step = checkStep(parts, child.path, child.payload);
  return { child, id: childChain(header.id, child.key), step };
}

/** A page's turn for its page transaction: `after` the page before's ended; `done()` gives the next page its turn. */
interface Turn {
  after: Promise<unknown>;
  done: () => void;
}

/** Writes page `n` (its pending child records, then, in its turn, its record), then starts its children's chains. */
async function writePage(parts: FanParts, header: Header, n: number, page: readonly Checked[], result: FanOutStarted, turn: Turn): Promise<void> {
  const now = new Date(parts.config.clock());
  const writer = writerOf(parts);
  const ns = header.parent.namespace;
  // Cancelled meanwhile (an operator, or the sweep for a parent that left it): no more children.
  // The pending child records are written first, in transactions of their own (a record already
  // there is kept), then the page record that lists them, in a transaction that reads the header:
  // it commits before a cancel (every child it lists has its record, so the cancel, reading the
  // pages and then the records by key, finds them all) or after one, seeing `cancelled` and
  // writing nothing. Nothing reads a child record its page does not list, and no chain is started
  // before its page is written, so records left unlisted change nothing: a cancel's are removed
  // here, a crash's are listed by the retried attempt. Only the page's transaction reads the
  // header: child-record transactions reading it too would contend on it (measured on the legacy
  // emulator: starting children at half the rate).
  // Child records in transactions of GROUPS (legacy Datastore takes 25 entity groups per transaction); one already there is kept.
  // `pageOf`: the page each child's record names (the one page that lists it for `fanIn()`).
  const pageOf = new Map<string, number>();
  const writeRecords = async (): Promise<void> => {
    await Promise.all(groupsOf(page).map((chunk) => parts.locks.transact(async (tx) => {
      const records = await Promise.all(chunk.map((c) => tx.get(childKey(c.id, ns))));
      chunk.forEach((c, i) => {
        const found = readChild(c.id, records[i], decodeKey);
        pageOf.set(c.id, found ? found.page ?? n : n);
        if (!records[i]) writer.child(tx, { id: c.id, fanout: header.id, key: c.child.key, state: 'pending', page: n, startedAt: now });
      });
    })));
    await claimUnlisted(parts, header, n, page, pageOf);
  };
  // The page record, unless the fan-out was cancelled: then the ids earlier attempts listed on it.
  // It lists the children whose record names this page; one an earlier attempt listed on another page stays there.
  const listPage = (): Promise<Set<string> | undefined> => parts.locks.transact(async (tx) => {
    const [stored, listedBefore] = await Promise.all([tx.get(headerKey(header.id, ns)), tx.get(pageKey(header.id, n, ns))]);
    const before = readPage(listedBefore);
    if (readHeader(header.id, stored, decodeKey)?.state === 'cancelled') return new Set(before);
    writer.page(tx, header.id, n, ns, [...new Set([...before, ...page.filter((c) => pageOf.get(c.id) === n).map((c) => c.id)])]);
    return undefined;
  });
  // One page transaction at a time, in page order (the next page's waits for this one's, whatever
  // became of it): each reads the header, and transactions reading one entity side by side wait
  // on each other (measured on the legacy emulator: four at once took ten times as long each, and
  // at eight pages at once these transactions, one after another, are most of the call).
  let refused: Set<string> | undefined;
  try {
    await writeRecords();
    await turn.after;
    refused = await listPage();
  } finally {
    turn.done();
  }
  if (refused) {
    // Cancelled before this page was listed: the records just written that no page lists are read
    // by nothing; remove them (those an earlier attempt listed, here or on another page, stay, for the cancel to settle).
    await Promise.all(groupsOf(page.filter((c) => pageOf.get(c.id) === n && !refused.has(c.id))).map((group) => parts.locks.transact(async (tx) => {
      const records = await Promise.all(group.map((c) => tx.get(childKey(c.id, ns))));
      group.forEach((c, i) => {
        const child = readChild(c.id, records[i], decodeKey);
        if (child?.state === 'pending' && child.page === n && child.started === undefined) tx.delete(childKey(c.id, ns));
      });
    }))).catch(() => undefined); // best effort: an unlisted record left behind changes nothing
    throw new TransitionError(`fanOut(): fan-out ${header.id} was cancelled while its children were being added`);
  }
  await startChildren(parts, page, result, header.id);
}

/**
 * The children of page `n` whose record an earlier attempt wrote for another page that never
 * listed it (it died between the two writes, and this attempt's source gave another order): their
 * record is moved to page `n`, which lists them (`pageOf` updated). Pages only grow, so a page
 * read listing a child always will. Reads nothing when every record is new or names page `n`.
 */
async function claimUnlisted(parts: FanParts, header: Header, n: number, page: readonly Checked[], pageOf: Map<string, number>): Promise<void> {
  const ns = header.parent.namespace;
  const elsewhere = page.filter((c) => pageOf.get(c.id) !== n);
  if (elsewhere.length === 0) return;
  const pages = [...new Set(elsewhere.map((c) => pageOf.get(c.id)!))];
  const listed = new Map((await getMany(parts, pages.map((p) => pageKey(header.id, p, ns)))).map((props, i) => [pages[i]!, new Set(readPage(props))]));
  const unlisted = elsewhere.filter((c) => !listed.get(pageOf.get(c.id)!)!.has(c.id));
  await Promise.all(groupsOf(unlisted).map((group) => parts.locks.transact(async (tx) => {
    const records = await Promise.all(group.map((c) => tx.get(childKey(c.id, ns))));
    group.forEach((c, i) => {
      const child = readChild(c.id, records[i], decodeKey);
      if (child?.state !== 'pending' || child.page !== pageOf.get(c.id)) return;
      writerOf(parts).child(tx, { ...child, page: n });
    });
  })));
  for (const c of unlisted) pageOf.set(c.id, n);
}

/** `items` in runs of at most {@link GROUPS}, one transaction's worth each. */
function groupsOf(items: readonly Checked[]): Checked[][] {
  const groups: Checked[][] = [];
  for (let start = 0; start < items.length; start += GROUPS) groups.push(items.slice(start, start + GROUPS));
  return groups;
}

/** A child's kickoff, as the batch kickoff's rounds carry it out. */
interface ChildJob extends KickoffJob {
  checked: Checked;
}

/**
 * A child's marker is its own record (read in the entity's lookup, written in its commit): a child
 * whose record is gone or settled, or says its chain was started, is never started again.
 */
function childMarking(parts: FanParts): KickoffMarking<ChildJob> {
  const encode = (k: Key): string => parts.dispatcher.encodeKey(k);
  return {
    recorded(job, marker, mine) {
      const child = readChild(job.chain, marker, decodeKey);
      if (child?.state !== 'pending') return { seq: 0 };
      return child.started !== undefined && !mine ? { seq: child.started } : undefined;
    },
    mark(job, marker, record) {
      const child = readChild(job.chain, marker, decodeKey)!; // pending, or `recorded` stopped the kickoff
      return { properties: childProperties({ ...child, started: record.seq }, encode), excludeFromIndexes: UNINDEXED };
    },
    async unmark(tx, job, record) {
      const child = readChild(job.chain, await tx.get(job.markerKey), decodeKey);
      if (child?.state !== 'pending' || child.started !== record.seq) return;
      const { started: _started, ...unstarted } = child;
      writerOf(parts).child(tx, unstarted);
    },
  };
}

/**
 * Starts the chains of a page's children through the batch kickoff's rounds (`kickoff-rounds.ts`);
 * counts in `result`. A child busy with another chain, or whose write the store refuses, settles
 * `failed`; the children started have their tasks sent; then, if some kickoffs kept meeting a
 * changed entity or a store fault, the step is retried (it finds the chains it started by their
 * records).
 */
async function startChildren(parts: FanParts, page: readonly Checked[], result: FanOutStarted, fanout: string): Promise<void> {
  const ns = page[0]?.child.key.namespace;
  const jobs: ChildJob[] = page.map((c) => ({ checked: c, key: c.child.key, entity: c.child.entity, chain: c.id, step: c.step, markerKey: childKey(c.id, ns), run: fanOutRun(fanout) }));
  const toSend: LedgerRecord[] = [];
  const refusals: Promise<void>[] = [];
  const stuck: Error[] = [];
  await kickoffRounds(parts, jobs, childMarking(parts), ({ checked: c }, outcome) => {
    if (outcome.kind === 'started') {
      result.started++;
      toSend.push(outcome.record);
    } else if (outcome.kind === 'busy') {
      refusals.push(refuse(parts, c, `the child's entity is busy with another chain (step ${outcome.seq} ${outcome.running ? 'running' : 'scheduled'})`, result));
    } else if (outcome.kind === 'failed' && outcome.cause === 'refused') {
      refusals.push(refuse(parts, c, `the store refused the child's kickoff: ${outcome.error.message}`, result));
    } else if (outcome.kind === 'failed') stuck.push(outcome.cause === 'plan' ? outcome.error : new StoreUnavailableError(outcome.error.message, { cause: outcome.error }));
  });
  await Promise.all(refusals);
  await Promise.all(toSend.map((record) => parts.dispatcher.send(record)));
  if (stuck.length === 1) throw stuck[0];
  if (stuck.length > 1) throw new StoreUnavailableError(`${stuck.length} children's kickoffs kept meeting a changed entity or a store fault under fanOut(); the step is retried (${stuck[0]!.message})`);
}

async function refuse(parts: FanParts, c: Checked, why: string, result: FanOutStarted): Promise<void> {
  result.refused++;
  parts.config.logger.warn('fan-out child not started; it settles failed', { key: keyPath(c.child.key), chain: c.id, why });
  await settleRecord(parts, c.id, c.child.key.namespace, 'failed', why);
}

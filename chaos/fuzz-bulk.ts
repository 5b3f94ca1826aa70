/**
 * The fuzz's bulk-action cases: forged confirmations, bad filters and replayed operation ids sent
 * to the status router's bulk routes, each with its one right answer. None starts anything: the
 * fuzz's store counter sees no write. The operation whose id is replayed is seeded done.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { Datastore } from '@google-cloud/datastore';
import { operationKey, operationProperties, type Operation } from '../src/ops/bulk/operation';
import type { Authenticator, Properties } from '../src/types';
import type { Rng } from './random';

/** Where the fuzz mounts the status router. */
export const OPS = '/ops';
/** The operator's credential the fuzz's status router takes. */
const OPERATOR = 'Bearer fuzz-operator';
/** A CSRF token, as a browser would hold it in its cookie and repeat in the form. */
const TOKEN = 'fuzzcsrftoken0123456789abcdefghij';
/** The operation the fuzz seeds, done, whose id is replayed. */
export const SEEDED_OPERATION = 'fuzz-operation-1';

/** The status router's authenticator in the fuzz. */
export const operatorAuth: Authenticator = (req) => (req.headers.authorization === OPERATOR ? { ok: true, principal: 'fuzz' } : { ok: false, status: 401, reason: 'no operator' });

/** A bulk case: the request and its one right answer. */
export interface BulkCase {
  what: string;
  statuses: number[];
  method: string;
  path: string;
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

/** Seeds the done operation (a retry of `kind`'s failed chains) whose id the cases replay. */
export async function seedOperation(datastore: Datastore, namespace: string, kind: string): Promise<void> {
  const now = new Date();
  const op: Operation = {
    id: SEEDED_OPERATION, action: 'retry', filter: { kind, namespace }, createdAt: now, path: `${OPS}/operations/step`, state: 'done',
    matched: 0, matchedExact: true, done: 0, skipped: 0, skips: {}, failed: 0, errors: [], pages: 1, finishedAt: now,
  };
  const props: Properties = { ...operationProperties(op), lock_seq: 2, lock_state: 'complete', lock_req: '', lock_try: 0, lock_ts: now, lock_chain: 'fuzz-op' };
  await datastore.save({ key: operationKey(SEEDED_OPERATION, namespace), data: props });
}

/** The cases, weighted, for the fuzz's crafted requests (kind and namespace those the router lists). */
export function bulkCases(rng: Rng, kind: string, namespace: string): Array<[number, () => BulkCase]> {
  const form = (fields: Record<string, string>): Buffer => Buffer.from(new URLSearchParams(fields).toString());
  const good = { action: 'retry', kind, namespace, id: SEEDED_OPERATION, csrf: TOKEN };
  const headers = (extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders => ({
    authorization: OPERATOR, cookie: `locker-csrf=${TOKEN}`, 'content-type': 'application/x-www-form-urlencoded', ...extra,
  });
  const post = (what: string, statuses: number[], fields: Record<string, string>, extra: OutgoingHttpHeaders = {}): BulkCase => ({
    what, statuses, method: 'POST', path: `${OPS}/bulk`, headers: headers(extra), body: form(fields),
  });
  const get = (what: string, statuses: number[], query: string): BulkCase => ({
    what, statuses, method: 'GET', path: `${OPS}/bulk?${query}`, headers: { authorization: OPERATOR }, body: Buffer.alloc(0),
  });
  // Never a valid id or kind: it starts with a character neither takes.
  const junk = (): string => `!${Buffer.from(Array.from({ length: rng.int(1, 40) }, () => rng.int(33, 126))).toString('latin1')}`;
  return [
    [1, () => post('a confirmation replaying a done operation\'s id (nothing starts again)', [303], good)],
    [1, () => post('a confirmation replaying an operation id with another action', [409], { ...good, action: 'resend' })],
    [1, () => post('a forged confirmation (its token is not the cookie\'s)', [403], { ...good, csrf: 'forged-token-forged-token-forged-token' })],
    [1, () => post('a confirmation from another site', [403], good, { 'sec-fetch-site': 'cross-site' })],
    [1, () => post('a confirmation without the operator\'s credential', [401], good, { authorization: 'Bearer nobody' })],
    [1, () => post('a confirmation with a bad filter', [400], { ...good, id: `fuzz-new-${rng.int(0, 1e6)}`, action: rng.pick(['cancel', 'explode', '']), kind: rng.pick([kind, 'Secret', junk()]) })],
    [1, () => post('a confirmation with a bad id', [400], { ...good, id: rng.pick(['', 'short', junk(), 'x'.repeat(65)]) })],
    [1, () => get('a confirm page with a bad filter', [400], new URLSearchParams({ action: rng.pick(['retry', 'cancel', 'x']), kind: rng.pick(['Secret', '', junk()]), fanOut: rng.pick(['', 'nothex', junk()]) }).toString())],
  ];
}

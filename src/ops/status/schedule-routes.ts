/**
 * The status router's schedules (`locker.recurring()`; docs/guides/status-page.md, "Schedules"):
 *
 *   GET  /schedules?cursor=        every schedule, a page at a time: next and last run, state, counts, actions
 *   GET  /schedules.json?limit=&cursor=   the same as JSON (a cursor when more follow: nothing is cut silently)
 *   POST /schedules/pause | /schedules/resume   form fields name, csrf; 303 to /schedules saying what was done
 *   GET  /schedules/run-now?name=  the confirm page: mints the run's id (nothing is done)
 *   POST /schedules/run-now        the confirmation (name, id, csrf): starts one run per id; 303 to /schedules
 *
 * The confirm page's form carries the id it minted: posted twice (a double click, a retried POST),
 * the confirmation starts one run (`runScheduleNow(name, id)` finds the run the id started).
 */
import { randomBytes } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import type { Key } from '@google-cloud/datastore';
import type { KeyWriting } from '../../keys/key-writing';
import { BadRequestError, TransitionError } from '../../errors/errors';
import { MAX_NAME_LENGTH } from '../../recurring/declaration';
import type { RunNowResult } from '../../recurring/operator';
import type { Inspector } from '../inspect/inspector';
import type { Logger } from '../../types';
import type { BulkRouteTools } from './bulk-routes';
import { CSRF_FIELD, csrfRefusal } from './csrf';
import type { StatusConfig } from './options';
import { renderMessage } from './page';
import { scheduleRows, schedulesJson, type SchedulesView } from './schedule-view';
import { renderRunNowConfirm, renderSchedules, SCHEDULE_DONE, type ScheduleDone } from './schedules-page';

/** What the schedule routes need from the Locker (the status router's backend has it). */
export interface ScheduleBackend {
  inspect(): Inspector;
  /** `X-Lock-Key` for a key (the step page's `?key=`). */
  encodeKey(key: Key): string;
  /** How the page writes a key (the store's key type: a document's path on a `FirestoreStore`). */
  showKey(key: Key): string;
  /** `locker.pauseSchedule(name)`. */
  pauseSchedule(name: string): Promise<boolean>;
  /** `locker.resumeSchedule(name)`. */
  resumeSchedule(name: string): Promise<boolean>;
  /** `locker.runScheduleNow(name, id)`: one run per id. */
  runScheduleNow(name: string, id: string): Promise<RunNowResult>;
  /** The names of the schedules this code declares (`locker.declaredSchedules`): only those can run now. */
  declaredSchedules(): ReadonlySet<string>;
  readonly config: { readonly logger: Logger; readonly clock: () => number };
}

/** A run-now id as the confirm page mints it, and the only form the confirmation takes. */
const RUN_NOW_ID = /^now-[A-Za-z0-9_-]{16,64}$/;

/** Rows on one page of `/schedules` at most, and in `/schedules.json` (`?limit=`). */
export const MAX_SCHEDULES_PAGE = 200;

/** How the schedules page writes a last run's key: the backend's `X-Lock-Key` encoding and its key type's `show`. */
function keyWriting(backend: ScheduleBackend): KeyWriting {
  return { encode: (key) => backend.encodeKey(key), show: (key) => backend.showKey(key) };
}

/** A page of schedules as the router shows it. */
export async function readSchedules(backend: ScheduleBackend, page: { limit: number; cursor?: string }): Promise<SchedulesView> {
  const inspector = backend.inspect();
  const found = await inspector.schedules(page);
  const view = scheduleRows(found, inspector.clock().now, keyWriting(backend));
  return page.cursor !== undefined ? { ...view, from: page.cursor } : view;
}

/** Mounts the schedule routes on `router`. */
export function scheduleRoutes(router: Router, backend: ScheduleBackend, config: StatusConfig, tools: BulkRouteTools): void {
  const { auth, handler, pageContext } = tools;
  const form = express.urlencoded({ extended: false, limit: '8kb' });
  router.get('/schedules', auth, handler(async (req, res) => {
    const view = await readSchedules(backend, readPage(req.query, config.pageSize));
    res.type('html').set('Cache-Control', 'no-store').send(renderSchedules(view, pageContext(config, req, res), readDone(req.query)));
  }));
  router.get('/schedules.json', auth, handler(async (req, res) => {
    const view = await readSchedules(backend, readPage(req.query, Math.min(config.pageSize, 100)));
    res.set('Cache-Control', 'no-store').json({ now: new Date(view.now).toISOString(), ...schedulesJson(view) });
  }));
  for (const action of ['pause', 'resume'] as const) {
    router.post(`/schedules/${action}`, auth, form, handler(async (req, res) => {
      const body = refusedOrBody(backend, req, res, action);
      if (!body) return;
      const name = readName(body.name);
      const changed = action === 'pause' ? await backend.pauseSchedule(name) : await backend.resumeSchedule(name);
      const done: ScheduleDone = action === 'pause' ? (changed ? 'paused' : 'already-paused') : (changed ? 'resumed' : 'not-paused');
      backend.config.logger.info(`status page: schedule ${action} ${changed ? 'done' : 'changed nothing'}`, { schedule: name, by: res.locals.principal as string | undefined });
      res.redirect(303, donePath(req.baseUrl, done, name));
    }));
  }
  router.get('/schedules/run-now', auth, handler(async (req, res) => {
    const name = readName(req.query.name);
    const view = await backend.inspect().schedule(name);
    if (!view) throw new BadRequestError(`no schedule named ${JSON.stringify(name)} is in the store`);
    if (!view.declaredHere) throw new TransitionError(`schedule ${JSON.stringify(name)} is not declared by this code: only an app that declares it (locker.recurring()) can run it`);
    const inspector = backend.inspect();
    const [row] = scheduleRows({ schedules: [view] }, inspector.clock().now, keyWriting(backend)).rows;
    res.type('html').set('Cache-Control', 'no-store').send(renderRunNowConfirm(row!, newRunNowId(), pageContext(config, req, res)));
  }));
  router.post('/schedules/run-now', auth, form, handler(async (req, res) => {
    const body = refusedOrBody(backend, req, res, 'run-now');
    if (!body) return;
    const name = readName(body.name);
    const id = body.id;
    if (typeof id !== 'string' || !RUN_NOW_ID.test(id)) throw new BadRequestError('the form has no run id (reload the confirm page)');
    if (!backend.declaredSchedules().has(name)) throw new TransitionError(`schedule ${JSON.stringify(name)} is not declared by this code: only an app that declares it (locker.recurring()) can run it`);
    const run = await backend.runScheduleNow(name, id);
    backend.config.logger.info(`status page: schedule run now ${run.outcome}`, { schedule: name, id, at: run.at.toISOString(), by: res.locals.principal as string | undefined, ...(run.error !== undefined && { error: run.error }) });
    res.redirect(303, donePath(req.baseUrl, run.outcome, name));
  }));
}

/** The form's fields, or undefined when the CSRF checks refused it (answered 403). */
function refusedOrBody(backend: ScheduleBackend, req: Request, res: Response, action: string): Record<string, unknown> | undefined {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const refusal = csrfRefusal(req, body[CSRF_FIELD]);
  if (!refusal) return body;
  backend.config.logger.warn('status page schedule action refused', { action, reason: refusal });
  res.status(403).set('Cache-Control', 'no-store').type('html').send(renderMessage('Not done', `Refused: ${refusal}.`, { base: req.baseUrl }));
  return undefined;
}

/** A new run-now id: the confirm page's form carries it. */
function newRunNowId(): string {
  return `now-${randomBytes(12).toString('base64url')}`;
}

function donePath(base: string, done: ScheduleDone, name: string): string {
  return `${base}/schedules?${new URLSearchParams({ done, name }).toString()}`;
}

/** `?done=&name=` after an action: what to confirm; nothing for anything else. */
function readDone(query: Record<string, unknown>): { what: ScheduleDone; name: string } | undefined {
  const { done, name } = query;
  if (typeof done !== 'string' || !(SCHEDULE_DONE as readonly string[]).includes(done)) return undefined;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH) return undefined;
  return { what: done as ScheduleDone, name };
}

function readName(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_NAME_LENGTH) throw new BadRequestError(`name must be a schedule's name (1 to ${MAX_NAME_LENGTH} characters), given once`);
  return value;
}

/** `?limit=&cursor=`: `limit` 1 to {@link MAX_SCHEDULES_PAGE} (`fallback` when left out). */
function readPage(query: Record<string, unknown>, fallback: number): { limit: number; cursor?: string } {
  const { limit, cursor } = query;
  let n = fallback;
  if (limit !== undefined) {
    if (typeof limit !== 'string' || !/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_SCHEDULES_PAGE) throw new BadRequestError(`limit must be 1 to ${MAX_SCHEDULES_PAGE}`);
    n = Number(limit);
  }
  if (cursor === undefined || cursor === '') return { limit: n };
  if (typeof cursor !== 'string' || cursor.length > 2_000) throw new BadRequestError('the cursor is not one a page handed out');
  return { limit: n, cursor };
}

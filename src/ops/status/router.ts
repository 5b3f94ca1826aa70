/**
 * `locker.statusRouter(options)`: a mountable Express router serving the operator's view as HTML
 * and JSON, and its actions as CSRF-safe POSTs. Every request is authenticated first; a refused
 * one gets its status and no data.
 *
 *   GET  /             the steps by state, kind and namespace (`?state=&kind=&namespace=&order=&cursor=`)
 *   GET  /steps.json   the same as JSON
 *   GET  /step?key=    one entity (`key` as `X-Lock-Key` encodes it); `/step.json?key=` as JSON
 *   GET  /kickoff?id=  a bulk kickoff's chains by state, with a progress bar; `/kickoff.json?id=`
 *   GET  /search?q=    a key as the page shows it, an encoded key or a chain id (one match: 303 to it); `/search.json?q=`
 *   GET  /throughput.json   steps finished per minute, p50 and p95 duration, from the chains' histories (`?minutes=`, 60 by default)
 *   GET  /kickoffs.json, /fanouts.json   bulk kickoffs and fan-outs, newest first, with progress (`?limit=&cursor=`; fan-outs `&namespace=`)
 *   GET  /kickoff-run.json?id=, /fanout.json?id=   one of them as a row (record, progress, oldest pending); with `&state=` its chains (a fan-out's children) in that state
 *   POST /step/retry | /step/resend | /step/cancel   form fields key, seq, csrf; answers 303 to the step
 *   GET  /schedules, /schedules.json, POST /schedules/pause | resume | run-now   recurring work (schedule-routes.ts)
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Key } from '@google-cloud/datastore';
import { BadRequestError, LockerError, TransitionError } from '../../errors/errors';
import { keyPath } from '../../keys/key-codec';
import type { Inspector } from '../inspect/inspector';
import { INSPECT_STATES, InspectState, type StepSummary } from '../inspect/step-view';
import type { ActionOptions, ActionResult } from '../actions';
import { bulkRoutes, type BulkBackend } from './bulk-routes';
import { readSchedules, scheduleRoutes, type ScheduleBackend } from './schedule-routes';
import { schedulesJson } from './schedule-view';
import type { Logger } from '../../types';
import { CSRF_FIELD, csrfRefusal, csrfToken } from './csrf';
import { parseStatusOptions, type StatusConfig, type StatusRouterOptions } from './options';
import { statusPageHeaders } from './headers';
import { renderDetail, renderList, renderMessage, type PageContext } from './page';
import { renderSearch } from './search-page';
import { fanOutJsonRow, kickoffJson } from './run-json';
import { renderKickoff } from './run-page';
import { kickoffRun } from '../../rules/kickoff-plan';
import { actionsFor, stepJson, type ActionName, type DetailView, type Filters, type ListView, type SearchView, type Section, type StepRow } from './view-model';

/** What the router needs from the Locker. */
export interface StatusBackend extends BulkBackend, ScheduleBackend {
  inspect(): Inspector;
  decodeKey(encoded: string): Key;
  retry(key: Key, options?: ActionOptions): Promise<ActionResult>;
  resend(key: Key, options?: ActionOptions): Promise<ActionResult>;
  cancel(key: Key, options?: ActionOptions): Promise<ActionResult>;
  readonly config: { readonly logger: Logger; readonly clock: () => number; readonly stallAfter: number };
}

const ACTIONS: readonly ActionName[] = ['retry', 'resend', 'cancel'];

/** Builds the router; throws `ConfigError` when an option is wrong (authentication is required). */
export function statusRouter(backend: StatusBackend, options: StatusRouterOptions): Router {
  const config = parseStatusOptions(options);
  const router = express.Router();
  // Per route, not router.use(): mounted at '/', the router must leave the app's other routes (task handlers) alone.
  const auth = [statusPageHeaders, authenticate(backend, config)];
  router.get('/', auth, handler(backend, async (req, res) => {
    const view = await listView(backend, config, req);
    res.type('html').set('Cache-Control', 'no-store').send(renderList(view, pageContext(config, req, res)));
  }));
  router.get('/steps.json', auth, handler(backend, async (req, res) => {
    const view = await listView(backend, config, req);
    res.set('Cache-Control', 'no-store').json({
      now: new Date(view.now).toISOString(),
      sections: view.sections.map((s) => ({ kind: s.kind, namespace: s.namespace, state: s.state, order: s.order, cursor: s.cursor, steps: s.rows.map((r) => stepJson(r.step, r.extra, r.actions)) })),
      ...(view.counts ? { counts: view.counts } : {}),
      ...(view.queue ? { queue: view.queue } : {}),
      ...(view.owed ? { alertsOwed: { cut: view.owed.cut, steps: view.owed.rows.map((r) => stepJson(r.step, r.extra, r.actions)) } } : {}),
      ...(view.schedules ? { schedules: schedulesJson(view.schedules) } : {}),
    });
  }));
  router.get('/step', auth, handler(backend, async (req, res) => {
    const view = await detailView(backend, config, req);
    res.type('html').set('Cache-Control', 'no-store').send(renderDetail(view, pageContext(config, req, res)));
  }));
  router.get('/step.json', auth, handler(backend, async (req, res) => {
    const view = await detailView(backend, config, req);
    res.set('Cache-Control', 'no-store').json({ ...stepJson(view.step, view.extra, view.actions), now: new Date(view.now).toISOString() });
  }));
  router.get('/kickoff', auth, handler(backend, async (req, res) => {
    const progress = await backend.inspect().kickoff(kickoffParam(req), { kinds: config.kinds, namespaces: config.namespaces });
    res.type('html').set('Cache-Control', 'no-store').send(renderKickoff(progress, config.kinds, pageContext(config, req, res)));
  }));
  router.get('/kickoff.json', auth, handler(backend, async (req, res) => {
    const progress = await backend.inspect().kickoff(kickoffParam(req), { kinds: config.kinds, namespaces: config.namespaces });
    res.set('Cache-Control', 'no-store').json(progress);
  }));
  router.get('/search', auth, handler(backend, async (req, res) => {
    const view = await searchView(backend, config, req);
    if (view.kickoff !== undefined && view.hits.length === 0 && req.query.list === undefined) {
      res.redirect(303, `${req.baseUrl}/kickoff?id=${encodeURIComponent(view.kickoff)}`);
      return;
    }
    if (view.hits.length === 1 && view.kickoff === undefined && req.query.list === undefined) {
      res.redirect(303, `${req.baseUrl}/step?key=${encodeURIComponent(view.hits[0]!.step.encodedKey)}`);
      return;
    }
    res.type('html').set('Cache-Control', 'no-store').send(renderSearch(view, pageContext(config, req, res)));
  }));
  router.get('/search.json', auth, handler(backend, async (req, res) => {
    const view = await searchView(backend, config, req);
    res.set('Cache-Control', 'no-store').json({
      now: new Date(view.now).toISOString(), query: view.text, ...(view.kickoff !== undefined ? { kickoff: view.kickoff } : {}),
      found: view.hits.map((h) => ({ by: h.by, ...stepJson(h.step, {}, actionsFor(h.step)) })),
    });
  }));
  router.get('/throughput.json', auth, handler(backend, async (req, res) => {
    const inspector = backend.inspect();
    const minutes = readMinutes(req.query.minutes);
    const t = await inspector.throughput({
      kinds: config.kinds, namespaces: config.namespaces, since: new Date(inspector.clock().now - minutes * 60_000),
    });
    res.set('Cache-Control', 'no-store').json(t);
  }));
  router.get('/kickoffs.json', auth, handler(backend, async (req, res) => {
    const page = await backend.inspect().kickoffs(readPage(req, config));
    res.set('Cache-Control', 'no-store').json({ now: new Date(backend.config.clock()).toISOString(), kickoffs: page.rows.map(kickoffJson), ...(page.cursor && { cursor: page.cursor }) });
  }));
  router.get('/kickoff-run.json', auth, handler(backend, async (req, res) => {
    const id = readText(req.query.id, 'id', 'the kickoff id');
    const row = await backend.inspect().kickoffRow(id);
    if (!row) throw new BadRequestError(`no kickoff ${JSON.stringify(id)} left a record`);
    const chains = await runChains(backend, config, req, row.run, row.kinds);
    res.set('Cache-Control', 'no-store').json({ now: new Date(backend.config.clock()).toISOString(), ...kickoffJson(row), ...chains });
  }));
  router.get('/fanouts.json', auth, handler(backend, async (req, res) => {
    const namespace = readNamespace(config, req);
    const page = await backend.inspect().fanOuts({ ...readPage(req, config), namespace });
    res.set('Cache-Control', 'no-store').json({ now: new Date(backend.config.clock()).toISOString(), fanOuts: page.rows.map(fanOutJsonRow), ...(page.cursor && { cursor: page.cursor }) });
  }));
  router.get('/fanout.json', auth, handler(backend, async (req, res) => {
    const id = readText(req.query.id, 'id', 'the fan-out id');
    const namespace = readNamespace(config, req);
    const row = await backend.inspect().fanOut(id, namespace);
    if (!row) throw new BadRequestError(`no fan-out ${JSON.stringify(id)}`);
    const chains = await runChains(backend, config, req, row.run, row.kinds.map((kind) => ({ kind, namespace })));
    res.set('Cache-Control', 'no-store').json({ now: new Date(backend.config.clock()).toISOString(), ...fanOutJsonRow(row), ...chains });
  }));
  router.post('/step/:action', auth, express.urlencoded({ extended: false, limit: '8kb' }), handler(backend, (req, res) => act(backend, req, res)));
  bulkRoutes(router, backend, config, { auth, handler: (fn) => handler(backend, fn), pageContext });
  scheduleRoutes(router, backend, config, { auth, handler: (fn) => handler(backend, fn), pageContext });
  return router;
}

function authenticate(backend: StatusBackend, config: StatusConfig) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    let verdict;
    try {
      verdict = await config.authenticate({ method: req.method, url: req.originalUrl, headers: req.headers });
    } catch (error) {
      verdict = { ok: false as const, status: 401 as const, reason: `the authenticator threw: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (verdict.ok) {
      res.locals.principal = typeof verdict.principal === 'string' && verdict.principal !== '' ? verdict.principal : undefined;
      return next();
    }
    backend.config.logger.warn('status page request refused', { status: verdict.status, reason: verdict.reason, path: req.originalUrl.split('?')[0] });
    res.status(verdict.status).set('Cache-Control', 'no-store').type('text').send(verdict.status === 401 ? 'authentication required\n' : 'forbidden\n');
  };
}

/** Runs a route; bad input is a 400 page, a refused action a 409, anything else a logged 500/503. */
function handler(backend: StatusBackend, fn: (req: Request, res: Response) => Promise<void>) {
  return (req: Request, res: Response): void => {
    fn(req, res).catch((error: unknown) => {
      const status = error instanceof RangeError || error instanceof BadRequestError ? 400
        : error instanceof TransitionError ? 409
        : error instanceof LockerError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      const fields = { path: req.originalUrl.split('?')[0], status, error: message };
      if (status >= 500) backend.config.logger.error('status page failed', fields);
      else backend.config.logger.warn('status page request not done', fields);
      const shown = status >= 500 ? 'The store could not be read; try again.' : message;
      if (res.headersSent) return;
      res.status(status).set('Cache-Control', 'no-store');
      if (req.path.endsWith('.json')) res.json({ error: shown });
      else res.type('html').send(renderMessage(status === 409 ? 'Not done' : status === 400 ? 'Bad request' : 'Error', shown, { base: req.baseUrl }));
    });
  };
}

async function listView(backend: StatusBackend, config: StatusConfig, req: Request): Promise<ListView> {
  const filters = readFilters(config, req);
  const inspector = backend.inspect();
  const now = inspector.clock().now;
  const kinds = filters.kind ? [filters.kind] : config.kinds;
  const namespaces = filters.namespace !== undefined ? [filters.namespace] : config.namespaces;
  const states = filters.state ? [filters.state] : config.overview;
  // By state first, then kind: what needs a person (failed, stalled) comes first across kinds.
  // Every section's reads run at once: the overview's store calls do not queue behind each other.
  const wanted = states.flatMap((state) => kinds.flatMap((kind) => namespaces.map((namespace) => ({ state, kind, namespace }))));
  const overview = !filters.state && filters.kickoff === undefined;
  const [sections, owed, queue, counts, operations, throughput, kickoffs, fanOuts, schedules] = await Promise.all([
    Promise.all(wanted.map((w) => section(inspector, config, filters, w))),
    overview && !filters.kind ? inspector.alertsOwed(config.pageSize) : Promise.resolve(undefined),
    inspector.queueDepth(),
    overview && inspector.canCount ? inspector.counts({ kinds, namespaces }) : Promise.resolve(undefined),
    overview && !filters.kind ? inspector.operations({ limit: 5, namespaces }) : Promise.resolve(undefined),
    overview ? inspector.throughput({ kinds, namespaces }) : Promise.resolve(undefined),
    overview && !filters.kind ? inspector.kickoffs({ limit: 5 }) : Promise.resolve(undefined),
    overview && !filters.kind ? Promise.all(namespaces.map((namespace) => inspector.fanOuts({ limit: 5, namespace }))) : Promise.resolve(undefined),
    overview && !filters.kind ? readSchedules(backend, { limit: config.pageSize }) : Promise.resolve(undefined),
  ]);
  const view: ListView = { now, filters, sections };
  if (queue) view.queue = queue;
  if (counts) view.counts = counts;
  if (operations) view.operations = operations;
  if (throughput) view.throughput = throughput;
  if (kickoffs) view.kickoffs = kickoffs.rows;
  if (schedules) view.schedules = schedules;
  if (fanOuts) view.fanOuts = fanOuts.flatMap((p) => p.rows).sort((a, b) => a.ageMs - b.ageMs).slice(0, 5);
  if (owed) view.owed = { rows: await Promise.all(owed.steps.map((s) => row(config, s))), cut: owed.cut };
  return view;
}

async function section(inspector: Inspector, config: StatusConfig, filters: Filters, at: { state: InspectState; kind: string; namespace: string }): Promise<Section> {
  const { state, kind, namespace } = at;
  const finished = state === InspectState.complete || state === InspectState.cancelled;
  const order = !filters.state && finished ? 'newest' : filters.order;
  const page = await inspector.list({
    state, kind, namespace, order, limit: config.pageSize,
    ...(filters.cursor ? { cursor: filters.cursor } : {}),
    ...(filters.kickoff !== undefined ? { run: kickoffRun(filters.kickoff) } : {}),
  });
  // On the overview a stale lease that is also stalled shows once, under stalled.
  const steps = !filters.state && state === InspectState.stale && config.overview.includes(InspectState.stalled) ? page.steps.filter((s) => !s.stalled) : page.steps;
  const out: Section = { kind, namespace, state, order, rows: await Promise.all(steps.map((s) => row(config, s))) };
  if (page.cursor) out.cursor = page.cursor;
  return out;
}

async function searchView(backend: StatusBackend, config: StatusConfig, req: Request): Promise<SearchView> {
  const text = typeof req.query.q === 'string' ? req.query.q : '';
  if (text.trim() === '') throw new BadRequestError('search for a key as the page shows it (Counter:"counters-12"), an encoded key or a chain id');
  const inspector = backend.inspect();
  const wanted = text.trim();
  const [hits, kickoff] = await Promise.all([
    inspector.search(text, { kinds: config.kinds, namespaces: config.namespaces }),
    // A kickoff id, read by key: its record, when scheduleMany() left one.
    wanted.length <= 400 && !/[\s/]/.test(wanted) ? inspector.kickoffRow(wanted) : Promise.resolve(undefined),
  ]);
  return { now: inspector.clock().now, text, hits, ...(kickoff ? { kickoff: kickoff.kickoffId } : {}) };
}

async function detailView(backend: StatusBackend, config: StatusConfig, req: Request): Promise<DetailView> {
  const key = readKey(backend, req.query.key);
  const step = await backend.inspect().step(key);
  if (!step) throw new BadRequestError(`${backend.showKey(key)} does not exist`);
  const view: DetailView = { now: backend.inspect().clock().now, step, extra: await extraColumns(config, step), actions: actionsFor(step) };
  const done = req.query.done;
  if (typeof done === 'string' && (ACTIONS as readonly string[]).includes(done)) view.done = done as ActionName;
  return view;
}

async function act(backend: StatusBackend, req: Request, res: Response): Promise<void> {
  const action = String(req.params.action);
  if (!(ACTIONS as readonly string[]).includes(action)) throw new BadRequestError(`no action ${action}: retry, resend or cancel`);
  const body = (req.body ?? {}) as Record<string, unknown>;
  const refusal = csrfRefusal(req, body[CSRF_FIELD]);
  if (refusal) {
    backend.config.logger.warn('status page action refused', { action, reason: refusal });
    res.status(403).set('Cache-Control', 'no-store').type('html').send(renderMessage('Not done', `Refused: ${refusal}.`, { base: req.baseUrl }));
    return;
  }
  const key = readKey(backend, body.key);
  const seq = typeof body.seq === 'string' && /^\d{1,15}$/.test(body.seq) ? Number(body.seq) : undefined;
  if (seq === undefined) throw new BadRequestError('the form has no step (seq)');
  const result = await backend[action as ActionName](key, { seq });
  backend.config.logger.info(`status page: ${action} done`, { key: keyPath(key), namespace: key.namespace, seq: result.seq, task: result.task });
  res.redirect(303, `${req.baseUrl}/step?key=${encodeURIComponent(String(body.key))}&done=${action}`);
}

function readFilters(config: StatusConfig, req: Request): Filters {
  const q = req.query;
  const text = (name: string): string | undefined => (typeof q[name] === 'string' && q[name] !== '' ? (q[name] as string) : undefined);
  const filters: Filters = { order: text('order') === 'newest' ? 'newest' : 'oldest' };
  const state = text('state');
  if (state !== undefined) {
    if (!(INSPECT_STATES as readonly string[]).includes(state)) throw new BadRequestError(`state must be one of ${INSPECT_STATES.join(', ')}`);
    filters.state = state as InspectState;
  }
  const kind = text('kind');
  if (kind !== undefined) {
    if (!config.kinds.includes(kind)) throw new BadRequestError(`kind must be one of ${config.kinds.join(', ')}`);
    filters.kind = kind;
  }
  const namespace = typeof q.namespace === 'string' && q.namespace !== '*' ? q.namespace : undefined;
  if (namespace !== undefined) {
    if (!config.namespaces.includes(namespace)) throw new BadRequestError('that namespace is not one this page lists');
    filters.namespace = namespace;
  }
  const kickoff = text('kickoff');
  if (kickoff !== undefined) {
    if (kickoff.length > 400) throw new BadRequestError('a kickoff id is at most 400 characters');
    filters.kickoff = kickoff;
  }
  const cursor = text('cursor');
  if (cursor !== undefined) {
    if (!filters.state || !filters.kind || filters.namespace === undefined) throw new BadRequestError('a cursor goes with one state, kind and namespace');
    filters.cursor = cursor;
  }
  return filters;
}

/** The window of `/throughput.json`, minutes: 60 when left out, 1 to 1,440. */
function readMinutes(value: unknown): number {
  if (value === undefined || value === '') return 60;
  if (typeof value !== 'string' || !/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 1_440) throw new BadRequestError('minutes must be 1 to 1440');
  return Number(value);
}

/** `?limit=&cursor=` of a page of rows. */
function readPage(req: Request, config: StatusConfig): { limit: number; cursor?: string } {
  const limit = typeof req.query.limit === 'string' && /^\d{1,3}$/.test(req.query.limit) ? Number(req.query.limit) : Math.min(config.pageSize, 100);
  const cursor = typeof req.query.cursor === 'string' && req.query.cursor !== '' ? req.query.cursor : undefined;
  if (cursor !== undefined && cursor.length > 2_000) throw new BadRequestError('the cursor is too long to be one a page handed out');
  return cursor === undefined ? { limit } : { limit, cursor };
}

/** `?namespace=` of a fan-out (its parent's): one this page lists; the default one when left out. */
function readNamespace(config: StatusConfig, req: Request): string {
  const namespace = typeof req.query.namespace === 'string' ? req.query.namespace : '';
  if (!config.namespaces.includes(namespace)) throw new BadRequestError('that namespace is not one this page lists');
  return namespace;
}

function readText(value: unknown, name: string, what: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 500) throw new BadRequestError(`${name} is missing: pass ${what}`);
  return value;
}

/**
 * With `?state=`: a run's chains in that state, one page per kind and namespace of the run that
 * this page lists (`?cursor=` goes with one `kind`), as `/steps.json` shows steps.
 */
async function runChains(
  backend: StatusBackend, config: StatusConfig, req: Request, run: string, kinds: readonly { kind: string; namespace: string }[],
): Promise<Record<string, unknown>> {
  const state = typeof req.query.state === 'string' ? req.query.state : undefined;
  if (state === undefined) return {};
  if (!(INSPECT_STATES as readonly string[]).includes(state)) throw new BadRequestError(`state must be one of ${INSPECT_STATES.join(', ')}`);
  const kind = typeof req.query.kind === 'string' && req.query.kind !== '' ? req.query.kind : undefined;
  const cursor = typeof req.query.cursor === 'string' && req.query.cursor !== '' ? req.query.cursor : undefined;
  if (cursor !== undefined && kind === undefined) throw new BadRequestError('a cursor goes with one kind');
  const shown = kinds.filter((k) => config.kinds.includes(k.kind) && config.namespaces.includes(k.namespace) && (kind === undefined || k.kind === kind));
  const inspector = backend.inspect();
  const sections = await Promise.all(shown.map(async ({ kind: k, namespace }) => {
    const page = await inspector.list({ state: state as InspectState, kind: k, namespace, run, limit: config.pageSize, ...(cursor !== undefined && { cursor }) });
    const rows = await Promise.all(page.steps.map((s) => row(config, s)));
    return { kind: k, namespace, state, ...(page.cursor && { cursor: page.cursor }), steps: rows.map((r) => stepJson(r.step, r.extra, r.actions)) };
  }));
  return { chains: sections };
}

function kickoffParam(req: Request): string {
  const id = req.query.id;
  if (typeof id !== 'string' || id === '' || id.length > 400) throw new BadRequestError('id is missing: pass the kickoff id scheduleMany() was given (or returned)');
  return id;
}

function readKey(backend: StatusBackend, value: unknown): Key {
  if (typeof value !== 'string' || value === '' || value.length > 2_000) throw new BadRequestError('key is missing: pass the key as X-Lock-Key encodes it');
  return backend.decodeKey(value);
}

async function row(config: StatusConfig, step: StepSummary): Promise<StepRow> {
  return { step, extra: await extraColumns(config, step), actions: actionsFor(step) };
}

async function extraColumns(config: StatusConfig, step: StepSummary): Promise<Record<string, string>> {
  const extra: Record<string, string> = {};
  for (const column of config.columns) {
    try {
      extra[column.title] = String(await column.value(step));
    } catch (error) {
      extra[column.title] = `(${error instanceof Error ? error.message : String(error)})`;
    }
  }
  return extra;
}

function pageContext(config: StatusConfig, req: Request, res: Response): PageContext {
  return {
    title: config.title, base: req.baseUrl, csrf: csrfToken(req, res), refreshSeconds: config.refreshSeconds,
    kinds: config.kinds, namespaces: config.namespaces, columns: config.columns.map((c) => c.title), intro: config.intro,
  };
}

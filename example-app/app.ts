/**
 * The example's Express app: the library's status router (the page at /, with the app's side
 * effects as a column), /status.json, the routes that start chains, the task handlers of the
 * chains, and the sweep routes.
 */
import express, { type Express, type Request, type Response } from 'express';
import { appEngineCronAuthenticator, INSPECT_STATES, type Authenticator, type InspectState, type Locker } from '../src/index';
import { DECLINED_ORDERS, MANY_COUNTERS, type Chains, type ManyStarted } from './chains';
import type { OperatorConfig } from './config';
import { localHostOnly, operatorAuthenticator, operatorOnly } from './operator';
import { REFRESH_SECONDS, renderIntro } from './page';
import type { Records } from './records';
import { CHAIN_KINDS, countAnswers, readStatus, sideEffectsColumn, type ListPage } from './status';

/** What the app is made of. */
export interface AppDeps {
  locker: Locker;
  chains: Chains;
  records: Records;
  /** On App Engine, `GET /sweep` accepts App Engine cron's requests (cron.yaml). */
  appEngine: boolean;
  /** Who may use the status page and start chains. */
  operator: OperatorConfig;
  /** Who may call POST /sweep: Cloud Scheduler's account; undefined for the Locker's own authenticator. */
  sweepAuthenticate?: Authenticator;
  /** With the local dispatcher, `POST /local/sweep` runs a sweep by hand (for operators; open on a local run). */
  localSweep: boolean;
  /** Key paths of the chains found unfinished when the app started (after a restart), shown in /status.json. */
  unfinishedAtStart: () => readonly string[];
  say: (line: string) => void;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');

  // A local run answers for a loopback host only, on every route (DNS rebinding).
  if (deps.operator.type === 'local') app.use(localHostOnly);
  const authenticate = operatorAuthenticator(deps.operator);
  // Open on a local run; on a deployed app only for operators (see operator.ts).
  const operatorsOnly = operatorOnly(deps.operator, authenticate);
  const answers = countAnswers(deps.locker);
  // Every chain up to 100 per kind and state; a longer list is named in `cut` with its next page
  // (`?kind=&state=&cursor=` reads one page of one list).
  app.get('/status.json', operatorsOnly, async (req, res) => {
    const page = listPage(req);
    if (typeof page === 'string') {
      res.status(400).type('text').send(page);
      return;
    }
    await answer(res, deps, async () => {
      let status;
      try {
        status = await readStatus(deps.locker, deps.records, page);
      } catch (error) {
        if (!(error instanceof RangeError)) throw error;
        res.status(400).type('text').send(error.message); // a cursor the list did not hand out
        return;
      }
      res.set('Cache-Control', 'no-store').json({ ...status, unfinishedAtStart: deps.unfinishedAtStart(), answers: answers() });
    });
  });
  app.post('/start/counter', operatorsOnly, (req, res) => start(req, res, deps, () => deps.chains.startCounter()));
  app.post('/start/order', operatorsOnly, (req, res) => start(req, res, deps, () => deps.chains.startOrder()));
  // An order with line items: a fan-out of one chain per line, joined into one invoice.
  app.post('/start/line-order', operatorsOnly, (req, res) => start(req, res, deps, () => deps.chains.startLineOrder()));
  // 1,000 counter chains with one locker.scheduleMany() call (`?count=` from 1 to 1,000).
  app.post('/start/counters', operatorsOnly, (req, res) => startMany(req, res, deps, MANY_COUNTERS, (n) => deps.chains.startCounters(n)));
  // 100 orders whose card is declined for good (`?count=` from 1 to 100): the Failed list, Retry and bulk retry.
  app.post('/start/declined-orders', operatorsOnly, (req, res) => startMany(req, res, deps, DECLINED_ORDERS, (n) => deps.chains.startDeclinedOrders(n)));

  // Task handlers: each authenticates the request (the local dispatcher's signature, an OIDC
  // token or App Engine's queue header) before it touches the store.
  app.use(deps.chains.router);

  // Re-delivers stalled steps: the library's sweep route. For Cloud Scheduler a POST, with the
  // scheduler's own account when SCHEDULER_SERVICE_ACCOUNT names it (else like a task request);
  // the local set-up sweeps in-process instead, and takes a sweep by hand at POST /local/sweep.
  app.post('/sweep', deps.locker.sweepHandler(deps.sweepAuthenticate === undefined ? {} : { authenticate: deps.sweepAuthenticate }));
  // App Engine cron (cron.yaml) sends a GET with `X-Appengine-Cron: true`, a header App Engine
  // strips from outside requests. Anywhere else the header proves nothing, so the route exists
  // only on App Engine.
  if (deps.appEngine) app.get('/sweep', deps.locker.sweepHandler({ authenticate: appEngineCronAuthenticator() }));
  app.post('/local/sweep', operatorsOnly, async (_req, res) => {
    if (!deps.localSweep) {
      res.status(404).type('text').send('a sweep by hand runs only with the local dispatcher; deployed, Cloud Scheduler calls POST /sweep');
      return;
    }
    await answer(res, deps, async () => {
      const result = await deps.locker.sweep();
      deps.say(`sweep by hand: ${JSON.stringify(result)}`);
      res.json(result);
    });
  });
  // The status page: the library's router, at the root (it answers only its own routes).
  app.use(deps.locker.statusRouter({
    authenticate,
    kinds: [...CHAIN_KINDS],
    namespaces: [deps.records.namespace ?? ''],
    columns: [sideEffectsColumn(deps.records)],
    overview: ['stalled', 'stale', 'failed', 'running', 'scheduled', 'complete', 'cancelled'],
    title: 'datastore-locker example',
    intro: renderIntro(),
    refreshSeconds: REFRESH_SECONDS,
  }));
  return app;
}

/** Starts a chain; answers a form with a redirect to the page, anything else with JSON. */
async function start(req: Request, res: Response, deps: AppDeps, run: () => Promise<{ kind: string; name: string }>): Promise<void> {
  await answer(res, deps, async () => {
    const ref = await run();
    if (req.accepts(['html', 'json']) === 'json') res.status(201).json(ref);
    else res.redirect(303, '/');
  });
}

/** Starts many chains (at most `max`, `?count=`); answers a form with a redirect to the kickoff's page, anything else with the counts as JSON. */
async function startMany(req: Request, res: Response, deps: AppDeps, max: number, run: (count: number) => Promise<ManyStarted>): Promise<void> {
  const raw = req.query.count;
  const count = raw === undefined ? max : Number(raw);
  if (!Number.isSafeInteger(count) || count < 1 || count > max) {
    res.status(400).type('text').send(`count must be a whole number from 1 to ${max}`);
    return;
  }
  await answer(res, deps, async () => {
    const started = await run(count);
    if (req.accepts(['html', 'json']) === 'json') res.status(201).json(started);
    else res.redirect(303, `/kickoff?id=${encodeURIComponent(started.kickoffId)}`); // its progress bar fills as the chains run
  });
}

/** The one list `/status.json?kind=&state=&cursor=` asks for, none (every list), or why the query is wrong. */
function listPage(req: Request): ListPage | undefined | string {
  const { kind, state, cursor } = req.query;
  if (kind === undefined && state === undefined && cursor === undefined) return undefined;
  if (typeof kind !== 'string' || !(CHAIN_KINDS as readonly string[]).includes(kind)) return `kind must be one of ${CHAIN_KINDS.join(', ')}`;
  if (typeof state !== 'string' || !(INSPECT_STATES as readonly string[]).includes(state)) return `state must be one of ${INSPECT_STATES.join(', ')}`;
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor === '' || cursor.length > 2_000)) return 'cursor must be one a cut list named';
  return { kind, state: state as InspectState, ...(typeof cursor === 'string' ? { cursor } : {}) };
}

/** Runs a route; a failure (the store or queue unreachable) is logged and answered with 503. */
async function answer(res: Response, deps: AppDeps, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    deps.say(`request failed: ${error instanceof Error ? error.message : String(error)}`);
    if (!res.headersSent) res.status(503).set('Retry-After', '1').type('text').send('the store or the queue is unavailable; try again');
  }
}

/**
 * Options of `locker.statusRouter()`, parsed once. Authentication is required: there is no
 * anonymous default.
 */
import { ConfigError } from '../../errors/errors';
import { rejectUnknownOptions, type OptionNames } from '../../config/option-names';
import { INSPECT_STATES, type InspectState, type StepSummary } from '../inspect/step-view';
import type { Authenticator } from '../../types';

/** An extra column of the status page: a title and the cell's text for a step. */
export interface StatusColumn {
  /** The column's heading (and its key in the JSON's `extra`). */
  title: string;
  /** The cell's text (escaped on the page; sent as is in JSON under `extra[title]`). */
  value: (step: StepSummary) => string | number | Promise<string | number>;
}

/** Options of `locker.statusRouter(options)`. */
export interface StatusRouterOptions {
  /**
   * Who may see the page and act: required. An `Authenticator` (`iapAuthenticator()` behind
   * Identity-Aware Proxy, `oidcAuthenticator()` for callers with Google ID tokens, or your own
   * `(req) => ({ ok: true } | { ok: false, status, reason })`). A refused request gets the status and
   * no data.
   */
  authenticate: Authenticator;
  /** The kinds of your lockable entities: the page lists each. Required, at least one. */
  kinds: readonly string[];
  /** The namespaces to list. Defaults to `['']`, the default namespace. */
  namespaces?: readonly string[];
  /** Rows per state on the overview and per page of a state's list. Defaults to 25. */
  pageSize?: number;
  /** The page reloads itself every this many seconds (a meta refresh); 0 turns it off. Defaults to 30. */
  refreshSeconds?: number;
  /** Extra columns, e.g. counts of your side effects. Defaults to none. */
  columns?: readonly StatusColumn[];
  /** The page's title. Defaults to `datastore-locker`. */
  title?: string;
  /** HTML shown above the lists on the overview, as given (yours, trusted: it is not escaped). Defaults to none. */
  intro?: string;
  /**
   * The states the overview (no `?state=` filter) lists, in this order, each across every kind
   * before the next state; `complete` and `cancelled` are listed newest first. Alerts still owed
   * follow the failed and stalled steps. Defaults to failed, stalled, stale, running, scheduled.
   */
  overview?: readonly InspectState[];
}

/** The complete configuration. */
export interface StatusConfig {
  readonly authenticate: Authenticator;
  readonly kinds: readonly string[];
  readonly namespaces: readonly string[];
  readonly pageSize: number;
  readonly refreshSeconds: number;
  readonly columns: readonly StatusColumn[];
  readonly title: string;
  readonly intro: string;
  readonly overview: readonly InspectState[];
}

/** Every default, in one place. */
export const STATUS_ROUTER_DEFAULTS = Object.freeze({
  /** The default namespace only. */
  namespaces: Object.freeze(['']) as readonly string[],
  /** Rows per state and page. */
  pageSize: 25,
  /** Seconds between the page's reloads. */
  refreshSeconds: 30,
  /** The page's title. */
  title: 'datastore-locker',
  /** The states needing attention, then the live ones. */
  overview: Object.freeze(['failed', 'stalled', 'stale', 'running', 'scheduled']) as readonly InspectState[],
});

const OPTION_NAMES: OptionNames<StatusRouterOptions> = {
  authenticate: true, kinds: true, namespaces: true, pageSize: true, refreshSeconds: true, columns: true, title: true, intro: true, overview: true,
};

/** Checks the options and fills the defaults; throws `ConfigError` saying what is wrong. */
export function parseStatusOptions(options: StatusRouterOptions): StatusConfig {
  if (typeof options !== 'object' || options === null) throw new ConfigError('statusRouter needs options { authenticate, kinds }.');
  rejectUnknownOptions('statusRouter', options, OPTION_NAMES);
  if (typeof options.authenticate !== 'function') {
    throw new ConfigError('statusRouter: `authenticate` is required (e.g. iapAuthenticator({ audience }) or a function (req) => verdict): the page shows your data and repairs chains.');
  }
  const kinds = names('kinds', options.kinds, false);
  const namespaces = options.namespaces === undefined ? STATUS_ROUTER_DEFAULTS.namespaces : names('namespaces', options.namespaces, true);
  const pageSize = options.pageSize ?? STATUS_ROUTER_DEFAULTS.pageSize;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 200) throw new ConfigError(`statusRouter: pageSize must be 1 to 200; got ${String(pageSize)}.`);
  const refreshSeconds = options.refreshSeconds ?? STATUS_ROUTER_DEFAULTS.refreshSeconds;
  if (!Number.isSafeInteger(refreshSeconds) || refreshSeconds < 0) throw new ConfigError(`statusRouter: refreshSeconds must be a whole number ≥ 0; got ${String(refreshSeconds)}.`);
  const columns = options.columns ?? [];
  if (!Array.isArray(columns) || columns.some((c: StatusColumn) => typeof c?.title !== 'string' || typeof c.value !== 'function')) {
    throw new ConfigError('statusRouter: columns must be an array of { title, value: (step) => text }.');
  }
  const title = options.title ?? STATUS_ROUTER_DEFAULTS.title;
  if (typeof title !== 'string') throw new ConfigError('statusRouter: title must be a string.');
  const intro = options.intro ?? '';
  if (typeof intro !== 'string') throw new ConfigError('statusRouter: intro must be a string of HTML.');
  const overview = options.overview ?? STATUS_ROUTER_DEFAULTS.overview;
  if (!Array.isArray(overview) || overview.length === 0 || overview.some((state) => !INSPECT_STATES.includes(state))) {
    throw new ConfigError(`statusRouter: overview must be a non-empty array of states (${INSPECT_STATES.join(', ')}).`);
  }
  return Object.freeze({
    authenticate: options.authenticate, kinds, namespaces, pageSize, refreshSeconds, columns: Object.freeze([...columns]), title, intro,
    overview: Object.freeze([...overview]),
  });
}

function names(option: string, given: unknown, emptyAllowed: boolean): readonly string[] {
  if (!Array.isArray(given) || given.length === 0 || given.some((n) => typeof n !== 'string' || (!emptyAllowed && n === ''))) {
    throw new ConfigError(`statusRouter: ${option} must be a non-empty array of ${option === 'kinds' ? 'kind names' : 'namespaces ("" is the default one)'}.`);
  }
  return Object.freeze([...new Set(given as string[])]);
}

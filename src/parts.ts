/**
 * The parts of a Locker and their ports (docs/design.md, section 15), built once by its
 * constructor. Each function below the Locker is handed the few of them it uses (a `Pick` of
 * `Parts`), never the Locker: the events port (`emit`) is the only edge that goes up. No part holds
 * the whole configuration: each is built with its own settings (`config/settings.ts`), and the
 * facade hands each operation the parts with that operation's settings.
 */
import type { EventEmitter } from 'node:events';
import { ALERT_SETTINGS, AlertSender } from './alert/sender';
import { Dispatcher, DISPATCHER_SETTINGS } from './chain/dispatcher';
import { Ledger } from './chain/ledger';
import type { Config } from './config/options';
import { settingsOf } from './config/settings';
import { ConfigErrorLog } from './errors/faults';
import type { LockerEvents } from './events/events';
import { Drain } from './step/drain';
import { FanOuts } from './fanout/fan-outs';
import { FANOUT_SETTINGS } from './fanout/read-children';
import { AttemptEnds, END_SETTINGS } from './step/attempt-end';
import { LeaseTaker, TAKE_SETTINGS } from './step/take';
import { SeenSteps } from './locks/seen-steps';
import { Locks, LOCKS_SETTINGS } from './locks/locks';
import { StoreReads } from './store/reads';
import { emitTo, type Emit } from './events/emit';
import { loadOtelApi } from './telemetry/otel-api';
import { Telemetry } from './telemetry/telemetry';

/** The parts of one Locker; a function is handed a `Pick` of them. */
export interface Parts {
  /** Logs the store's configuration errors at most once a minute. */
  readonly configErrors: ConfigErrorLog;
  /** What this process last saw of each entity's lock (see `locks/seen-steps.ts`). */
  readonly seen: SeenSteps;
  /** OpenTelemetry spans and counters (see `telemetry/telemetry.ts`); inert without the API. */
  readonly telemetry: Telemetry;
  /** The attempts in flight, and whether new ones are taken (`shutdown()`). */
  readonly drain: Drain;
  /** The events port: reports to the Locker's listeners, isolated. */
  readonly emit: Emit;
  /** The one part that reads and writes locks. */
  readonly locks: Locks;
  /** The store's reads of records that are not a lock's (see `store/reads.ts`). */
  readonly reads: StoreReads;
  /** Sends alerts within `alertTimeout`, and keeps the sends in flight. */
  readonly alerts: AlertSender;
  /** Turns a ledger record into its task. */
  readonly dispatcher: Dispatcher;
  /** Claims a record's next send, retires records. */
  readonly ledger: Ledger;
  /** The fan-out part: what a step's attempt does with fan-outs (`ctx.fanOut()`, `ctx.fanIn()`, a child's settle). */
  readonly fanouts: FanOuts;
  /** Takes the lease when a task arrives, or answers a task that does not run. */
  readonly taker: LeaseTaker;
  /** How attempts end: finished, next step scheduled, sealed, failed, handed back, lost. */
  readonly ends: AttemptEnds;
}

/** Builds the parts of a Locker whose events go to `emitter`; `ready` resolves once the store's project id is known, or could not be. */
export function buildParts(config: Config, ready: Promise<void>, emitter: EventEmitter<LockerEvents>): Parts {
  const seen = new SeenSteps(config.duplicateCache);
  const locks = new Locks(settingsOf(config, LOCKS_SETTINGS), seen);
  const telemetry = new Telemetry(config.telemetry ? loadOtelApi() : undefined);
  const emit = emitTo(emitter, config.logger, telemetry);
  const reads = new StoreReads(config.store);
  const dispatcher = new Dispatcher(settingsOf(config, DISPATCHER_SETTINGS), ready);
  const ledger = new Ledger({ records: config.store, reads, logger: config.logger }, (fn) => locks.transact(fn));
  const alerts = new AlertSender(settingsOf(config, ALERT_SETTINGS), locks);
  const fanouts = new FanOuts({ config: settingsOf(config, FANOUT_SETTINGS), locks, reads, emit, dispatcher, ledger });
  return {
    configErrors: new ConfigErrorLog(),
    seen,
    telemetry,
    drain: new Drain(),
    emit,
    locks,
    reads,
    alerts,
    dispatcher,
    ledger,
    fanouts,
    taker: new LeaseTaker({ config: settingsOf(config, TAKE_SETTINGS), locks, seen, emit, alerts, ledger, basePath: () => dispatcher.basePath }),
    ends: new AttemptEnds({ config: settingsOf(config, END_SETTINGS), locks, emit, alerts, ledger, dispatcher, fanouts, telemetry }),
  };
}

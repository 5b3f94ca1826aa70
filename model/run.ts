/**
 * Runs the model: seeded, shrinkable sequences of commands (fast-check's `commands` with
 * `asyncModelRun`) against real Lockers on the memory store, the legacy Datastore emulator or the
 * Firestore emulator in Native mode, each sequence brought to quiet and judged by the oracle. On a counterexample, fast-check shrinks it,
 * and the result carries the shrunk sequence, its configuration, the seed and the replay path.
 */
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { Datastore, type Key } from '@google-cloud/datastore';
import { MemoryStore } from '../src/store/memory/store';
import { DatastoreStore } from '../src/store/datastore/store';
import { FirestoreKeyStore } from '../src/store/firestore/store';
import { NATIVE_EMULATOR_OPTIONS } from '../test/support/firestore-native';
import { TestSmtpServer } from '../test/support/smtp';
import { commandArbitraries, configArbitrary, type Command, type Feature } from './commands';
import { Loopback } from './loopback';
import { openNativeEmulator, type NativeEmulator } from './native-emulator';
import { judge, PROMISES, type Violation } from './oracle';
import { KNOWN_DEFECTS, type KnownDefect } from './scenarios';
import { World, type Backend, type SequenceConfig } from './world';

/** Where the entities live: a memory store, the legacy Datastore emulator, or the Firestore emulator in Native mode (`FirestoreKeyStore`: `FirestoreStore` driven with the model's Datastore `Key`s). */
export type StoreKind = 'memory' | 'datastore' | 'firestoreNative';

/** Every store kind, as `--store` takes it. */
export const STORE_KINDS: readonly StoreKind[] = Object.freeze(['memory', 'datastore', 'firestoreNative']);

/** The npm script that runs the model on each store (a replay line names it). */
export const STORE_SCRIPTS: Readonly<Record<StoreKind, string>> = Object.freeze({ memory: 'model', datastore: 'model:datastore', firestoreNative: 'model:native' });

/** The project id of the model's keys and of its Native-mode client. */
const MODEL_PROJECT = 'locker-model';

/** How to run the model. */
export interface ModelOptions {
  seed: number;
  /** Sequences to generate (shrinking runs more). */
  runs: number;
  store: StoreKind;
  /** Commands per sequence at most. Defaults to 40. */
  maxCommands?: number;
  /** fast-check's replay path of a counterexample, to run it alone (with `replayPath`). */
  path?: string;
  /** The commands' own replay path of that counterexample (`fc.commands`' `replayPath`). */
  replayPath?: string;
  /** Features left out of the sequences (see `FEATURES`). */
  without?: readonly Feature[];
  /** Violations whose text contains one of these are not counted (to look past a known defect that no feature removes). */
  ignore?: readonly string[];
  /** Shrink a counterexample (the default); false stops at the first one found (the mutation check counts, it does not read). */
  shrink?: boolean;
}

/** A counterexample, shrunk. */
export interface Counterexample {
  violations: Violation[];
  config: SequenceConfig;
  /** The shrunk sequence, one command a line. */
  commands: string[];
  /** fast-check's replay path (`--path`). */
  path: string | undefined;
  /** The commands' replay path (`--replay-path`). */
  replayPath: string | undefined;
  shrinks: number;
}

/** What a run did. */
export interface ModelResult {
  seed: number;
  store: StoreKind;
  /** Sequences run, shrinking included. */
  sequences: number;
  /** Sequences generated until the first counterexample (all of them when none was found). */
  generated: number;
  /** Features left out. */
  without: Feature[];
  /** Violation texts not counted. */
  ignore: string[];
  /** Operations run: commands, and the deliveries and sweeps that brought each sequence to quiet. */
  operations: number;
  wallMs: number;
  /** Where the first counterexample was met, before shrinking: its sequence's number, and the operations and wall time until it was judged. */
  first?: { sequence: number; operations: number; wallMs: number };
  failure?: Counterexample;
}

/** A failed oracle check, thrown inside the property so that fast-check shrinks the sequence. */
export class BrokenPromise extends Error {
  constructor(readonly violations: Violation[]) {
    super(violations.map((v) => `(${v.promise}) ${PROMISES[v.promise]}: ${v.text}`).join('\n'));
    this.name = 'BrokenPromise';
  }
}

/** The parts a run shares between sequences: the loopback server, the SMTP server, and where stores come from. */
export class Rig {
  private constructor(
    readonly store: StoreKind,
    private readonly loopback: Loopback,
    private readonly smtp: TestSmtpServer,
    private readonly datastore: Datastore,
    private readonly native: NativeEmulator | undefined,
  ) {}

  /**
   * Starts the servers; `datastore` needs `DATASTORE_EMULATOR_HOST` (the test runner sets it);
   * `firestoreNative` uses the emulator `FIRESTORE_EMULATOR_HOST` names, else starts one (native-emulator.ts).
   */
  static async start(store: StoreKind): Promise<Rig> {
    let datastore: Datastore;
    let native: NativeEmulator | undefined;
    if (store === 'datastore') {
      const host = process.env.DATASTORE_EMULATOR_HOST;
      if (!host) throw new Error('--store datastore needs DATASTORE_EMULATOR_HOST: run it as `npm run model:datastore`, or through the test runner');
      datastore = new Datastore({ projectId: process.env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: host });
    } else {
      datastore = new Datastore({ projectId: MODEL_PROJECT }); // builds keys; never connects
      if (store === 'firestoreNative') native = await openNativeEmulator(MODEL_PROJECT);
    }
    try {
      return new Rig(store, await Loopback.start(), await TestSmtpServer.start(), datastore, native);
    } catch (error) {
      await native?.stop();
      throw error;
    }
  }

  private namespaces = 0;

  /**
   * A fresh store for one sequence: an empty memory store, or a namespace of its own on the
   * emulator (on Native mode, the subcollections of `LockerNamespaces/<namespace>`; the store's
   * sweep sees only that namespace). On Native mode the store has the tests' call deadline
   * (`NATIVE_EMULATOR_OPTIONS`: the emulator's lock waits reach about 5 s).
   */
  backend(): Backend {
    const loopback = this.loopback;
    const smtp = this.smtp;
    const datastore = this.datastore;
    if (this.store === 'memory') {
      return { store: new MemoryStore(), key: (name) => datastore.key(['ModelEntity', name]), loopback, smtp };
    }
    const namespace = `model-${process.pid}-${++this.namespaces}-${Math.random().toString(36).slice(2, 8)}`;
    const key = (name: string): Key => datastore.key({ namespace, path: ['ModelEntity', name] });
    if (this.native) {
      return { store: new FirestoreKeyStore(this.native.client, { ...NATIVE_EMULATOR_OPTIONS, projectId: MODEL_PROJECT, namespaces: [namespace] }), key, loopback, smtp };
    }
    return { store: new DatastoreStore(datastore, { namespaces: [namespace] }), key, loopback, smtp };
  }

  /** Stops the servers (and the Native-mode emulator's client, and the emulator when the rig started it). */
  async stop(): Promise<void> {
    await this.loopback.stop();
    await this.smtp.stop();
    await this.native?.stop();
  }
}

/** Runs one sequence on a fresh world, brings it to quiet, and judges it; resolves to the violations and the operations run. */
export async function runSequence(rig: Rig, config: SequenceConfig, commands: Iterable<Command>): Promise<{ violations: Violation[]; operations: number }> {
  const world = new World(config, rig.backend());
  try {
    await fc.asyncModelRun(() => ({ model: {}, real: world }), commands);
    await world.quiet();
    await world.readRecurring();
    return { violations: judge(world.observations()), operations: world.operations };
  } finally {
    await world.close();
  }
}

/** Runs the model; see the file's comment. */
export async function runModel(options: ModelOptions): Promise<ModelResult> {
  const started = performance.now();
  const rig = await Rig.start(options.store);
  let sequences = 0;
  let operations = 0;
  let first: ModelResult['first'];
  try {
    const without = new Set(options.without ?? []);
    const ignore = [...(options.ignore ?? [])];
    const property = fc.asyncProperty(configArbitrary(without), fc.commands(commandArbitraries(without), {
      maxCommands: options.maxCommands ?? 40, size: 'max', ...(options.replayPath ? { replayPath: options.replayPath } : {}),
    }), async (config, commands) => {
      sequences++;
      const outcome = await runSequence(rig, config, commands);
      operations += outcome.operations;
      outcome.violations = outcome.violations.filter((v) => !ignore.some((text) => v.text.includes(text)));
      if (outcome.violations.length > 0) {
        first ??= { sequence: sequences, operations, wallMs: Math.round(performance.now() - started) };
        throw new BrokenPromise(outcome.violations);
      }
    });
    const details = await fc.check(property, {
      seed: options.seed, numRuns: options.runs, endOnFailure: options.shrink === false, ...(options.path ? { path: options.path } : {}),
    });
    const result: ModelResult = {
      seed: options.seed, store: options.store, sequences, generated: details.numRuns, without: [...without], ignore, operations, wallMs: Math.round(performance.now() - started),
      ...(first ? { first } : {}),
    };
    if (details.failed && details.counterexample) {
      const [config, commands] = details.counterexample;
      const error = details.errorInstance;
      result.failure = {
        violations: error instanceof BrokenPromise ? error.violations : [{ promise: 'a', text: `the run threw: ${String(error)}` }],
        config,
        commands: [...commands].map(String),
        path: details.counterexamplePath ?? undefined,
        replayPath: /replayPath="([^"]*)"/.exec(String(commands))?.[1],
        shrinks: details.numShrinks,
      };
    }
    return result;
  } finally {
    await rig.stop();
  }
}

/** A counterexample as the model prints it: the broken promises, the seed and path, and the shrunk sequence. */
export function describeFailure(result: ModelResult): string {
  const f = result.failure;
  if (!f) return '';
  return [
    `counterexample (seed ${result.seed}, path ${f.path ?? '-'}, ${f.shrinks} shrinks):`,
    ...f.violations.map((v) => `  broken (${v.promise}) ${PROMISES[v.promise]}: ${v.text}`),
    `  config: ${f.config.instances} instances, ${f.config.alerter} alerter, maxRetries ${f.config.maxRetries}${f.config.requestTimeout === undefined ? '' : `, requestTimeout ${f.config.requestTimeout} ms`}`,
    '  sequence:',
    ...f.commands.map((c, i) => `    ${i + 1}. ${c}`),
    `  replay: npm run ${STORE_SCRIPTS[result.store]} -- --seed ${result.seed} --path ${f.path ?? ''} --replay-path '${f.replayPath ?? ''}'${result.without.length > 0 ? ` --without ${result.without.join(',')}` : ''}${result.ignore.map((t) => ` --ignore '${t}'`).join('')}`,
  ].join('\n');
}

/** What a known defect's sequence did. */
export interface KnownOutcome {
  defect: KnownDefect;
  violations: Violation[];
}

/** Runs every known defect's sequence (scenarios.ts) on one store and judges it. */
export async function replayKnown(store: StoreKind): Promise<KnownOutcome[]> {
  const rig = await Rig.start(store);
  try {
    const out: KnownOutcome[] = [];
    for (const defect of KNOWN_DEFECTS) out.push({ defect, violations: (await runSequence(rig, defect.config, defect.commands())).violations });
    return out;
  } finally {
    await rig.stop();
  }
}

/**
 * The state of every chain the app started, read from the store: the lock fields of each chain's
 * entity and the side-effect records of its steps. Served as JSON at /status.json and rendered as
 * HTML at /.
 */
import { keyPath, StepState, type Properties } from '../src/index';
import type { Records } from './records';

/** A chain's state as the status page shows it: `running` is a scheduled step whose lease is held. */
export type ChainState = 'scheduled' | 'running' | 'complete' | 'failed';

/** One step of a chain. */
export interface StepStatus {
  seq: number;
  /** Times the step's side effect ran. */
  runs: number;
  /** Times the step's handler was entered (a failed attempt counts). */
  attempts: number;
  /** Duplicate deliveries of the step that were dropped. */
  dropped: number;
  /** The side effect, e.g. `charged`. */
  effect: string;
}

/** One chain. */
export interface ChainStatus {
  /** The entity's key path, e.g. `Counter:"counter-1a2b3c4d"`. */
  key: string;
  kind: string;
  /** `lock_seq`: the current step (one past the last step once complete). */
  seq: number;
  state: ChainState;
  /** The attempt holding the lease, if any. */
  holder: string;
  /** Failed attempts of the current step. */
  retries: number;
  /** The first line of the current step's last error, if any. */
  lastError: string;
  steps: StepStatus[];
}

export interface Status {
  chains: ChainStatus[];
}

/** Reads the status of the chains the app started, newest first; chains whose entity is gone are left out. */
export async function readStatus(records: Records): Promise<Status> {
  const refs = (await records.chains()).reverse();
  const chains = await Promise.all(refs.map(async (ref) => {
    const key = records.chainKey(ref);
    const props = await records.chainEntity(key);
    if (!props) return undefined;
    const seq = count(props.lock_seq);
    const steps = (await records.steps(key, seq)).map(({ seq: s, runs, attempts, dropped, effect }) => ({ seq: s, runs, attempts, dropped, effect }));
    return {
      key: keyPath(key),
      kind: ref.kind,
      seq,
      state: chainState(props),
      holder: text(props.lock_req),
      retries: count(props.lock_try),
      lastError: text(props.lock_err).split('\n')[0] ?? '',
      steps,
    } satisfies ChainStatus;
  }));
  return { chains: chains.filter((c): c is ChainStatus => c !== undefined) };
}

/** The chain's state from its lock fields. */
export function chainState(props: Properties): ChainState {
  if (props.lock_state === StepState.complete) return 'complete';
  if (props.lock_state === StepState.failed) return 'failed';
  return text(props.lock_req) !== '' ? 'running' : 'scheduled';
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : 0;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/**
 * What the step-against-its-limit part prints (`against-limit.ts`): one row per backend at
 * concurrency 1 (medians, × limit) and at concurrency 16 (median ops/s over batches, steps ÷ the
 * limit: the definition of the Datastore part's `throughput16ToLimit`), then its JSON fields.
 * At 16 it also gives the limit whose read reads the step's record too: its ops/s against the
 * limit's, and the steps' against it (what the library's own work leaves of it).
 * The targets: issue 40's for Firestore in Native mode (≤ 1.1 × the limit at concurrency 1,
 * ≥ 0.8 × its throughput at 16); issues 8's and 27's for the Datastore emulators.
 */
import type { AgainstLimitSamples } from './against-limit';
import { LIMIT_TARGETS, THROUGHPUT_TARGETS, row, verdict } from './report';
import type { Settings } from './settings';
import { round, summarize } from './stats';

/** The backend name `step.ts` gives the Native-mode store, which issue 40's targets apply to. */
export const NATIVE_BACKEND = 'Firestore emulator (Native mode)';

/** Issue 40's targets for a step on Firestore in Native mode. */
export const NATIVE_TARGETS = Object.freeze({ stepToLimit: 1.1, throughput16ToLimit: 0.8 });

const COLUMNS = [40, 12, 12, 9, 14];
const RECORD_COLUMNS = [40, 12, 12, 14];

/** One backend's figures. */
function figures(x: AgainstLimitSamples) {
  const step = summarize(x.step);
  const limit = summarize(x.limit);
  const stepOps = summarize(x.stepOpsPerSec).median;
  const limitOps = summarize(x.limitOpsPerSec).median;
  const limitRecordOps = summarize(x.limitRecordOpsPerSec).median;
  const native = x.backend === NATIVE_BACKEND;
  return {
    step, limit, stepOps, limitOps, limitRecordOps,
    stepToLimit: step.median / limit.median,
    throughput16ToLimit: stepOps / limitOps,
    limitWithRecordToLimit16: limitRecordOps / limitOps,
    throughput16ToLimitWithRecord: stepOps / limitRecordOps,
    targets: native ? NATIVE_TARGETS : { stepToLimit: LIMIT_TARGETS.stepToLimit, throughput16ToLimit: THROUGHPUT_TARGETS.throughput16ToLimit },
  };
}

/** The part's lines. */
export function againstLimitLines(all: readonly AgainstLimitSamples[], s: Settings): string[] {
  const lines = [
    'A step against its physical limit on each backend (the same code on each store: bench/against-limit.ts; ratios within this run)',
    `At concurrency 1: ${s.rounds} interleaved rounds after ${s.warmup} warm-up rounds (and ${s.jvmWarmup} warm-up steps and limits at ${s.concurrency})`,
    row(['', 'step ms', 'limit ms', '× limit', 'target'], COLUMNS),
  ];
  for (const x of all) {
    const f = figures(x);
    lines.push(row([x.backend, f.step.median.toFixed(2), f.limit.median.toFixed(2), f.stepToLimit.toFixed(2), verdict(f.stepToLimit, f.targets.stepToLimit, 'max')], COLUMNS));
  }
  lines.push(`At concurrency ${s.concurrency}: ${s.batches} alternating batches of ${s.batchOps * s.concurrency} steps (each with its ledger record) and of the limit`);
  lines.push(row(['', 'step ops/s', 'limit ops/s', '× limit', 'target'], COLUMNS));
  for (const x of all) {
    const f = figures(x);
    lines.push(row([x.backend, f.stepOps.toFixed(0), f.limitOps.toFixed(0), f.throughput16ToLimit.toFixed(2), verdict(f.throughput16ToLimit, f.targets.throughput16ToLimit, 'min')], COLUMNS));
  }
  lines.push(`  (targets: issue 40's for ${NATIVE_BACKEND}; the Datastore part's, issues 8 and 27, for the others)`);
  lines.push(`At concurrency ${s.concurrency}, the limit whose read also reads the step's record (as a step's does), in batches alternating with the two above`);
  lines.push(row(['', 'its ops/s', '× limit', 'steps ÷ it'], RECORD_COLUMNS));
  for (const x of all) {
    const f = figures(x);
    lines.push(row([x.backend, f.limitRecordOps.toFixed(0), f.limitWithRecordToLimit16.toFixed(2), f.throughput16ToLimitWithRecord.toFixed(2)], RECORD_COLUMNS));
  }
  return lines;
}

/** The part's JSON fields: one entry per backend, and the Native figures flat. */
export function againstLimitJson(all: readonly AgainstLimitSamples[]): Record<string, unknown> {
  const rows = all.map((x) => {
    const f = figures(x);
    return {
      backend: x.backend,
      stepMs: round(f.step.median), stepLimitMs: round(f.limit.median), stepToLimit: round(f.stepToLimit),
      stepOpsPerSec16: round(f.stepOps, 1), limitOpsPerSec16: round(f.limitOps, 1), throughput16ToLimit: round(f.throughput16ToLimit),
      limitRecordOpsPerSec16: round(f.limitRecordOps, 1), limitWithRecordToLimit16: round(f.limitWithRecordToLimit16), throughput16ToLimitWithRecord: round(f.throughput16ToLimitWithRecord),
      targetsMet: f.stepToLimit <= f.targets.stepToLimit && f.throughput16ToLimit >= f.targets.throughput16ToLimit,
    };
  });
  const native = rows.find((r) => r.backend === NATIVE_BACKEND);
  return {
    againstLimit: rows,
    ...(native && { nativeStepToLimit: native.stepToLimit, nativeThroughput16ToLimit: native.throughput16ToLimit, nativeTargetsMet: native.targetsMet }),
  };
}

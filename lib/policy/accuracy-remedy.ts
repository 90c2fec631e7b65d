/**
 * What would meet a failed accuracy requirement, measured rather than guessed: the same arrivals
 * `sluice certify` sent (its seeded Poisson stream at 1.6× the limit) run through the engine's own
 * algorithms — an exact sliding log, and the sliding window counter at each precision — counting
 * admissions in the steady state (from the end of the first window) as the certification does. The
 * remedy is the smallest `precision` whose deviation from the exact log is within the tolerance;
 * when none up to the policy file's 60 is, the exact algorithm, `sliding_window_log`.
 */
import { slidingWindowCounter, type SlidingCounterState } from "./algorithms/sliding-window-counter";
import { slidingWindowLog, type SlidingLogState } from "./algorithms/sliding-window-log";
import type { AlgorithmLimit } from "./algorithms/types";

/** Precisions tried, in order (the policy file allows 1–60). */
export const REMEDY_PRECISIONS = [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 60] as const;

export interface AccuracyRemedy {
  /** `precision: 4` or `algorithm: sliding_window_log`. */
  change: string;
  /** The deviation the change measured on the same arrivals (fraction); 0 for the exact log. */
  deviation: number;
  /** The deviation of the limit as it is, on the same arrivals (fraction). */
  asIs: number;
  /** "precision: 4 (3.1% on the same arrivals; as is 9.4%)". */
  text: string;
}

interface Run {
  limit: number;
  windowMs: number;
  cost: number;
  /** Absolute arrival times (ms), ascending. */
  arrivalsMs: readonly number[];
  /** Admissions are counted from here on (the steady state). */
  countFromMs: number;
}

function baseLimit(run: Run, precision: number): AlgorithmLimit {
  return { limit: run.limit, windowMs: run.windowMs, burst: run.limit, precision, mode: "reject", maxDelayMs: 0, leaseTtlMs: 0 };
}

/** Admissions of the exact log (algorithm "log") or the counter at `precision`, in the steady state. */
export function admitted(run: Run, algorithm: "log" | "counter", precision = 1): number {
  const limit = baseLimit(run, precision);
  let log: SlidingLogState | undefined;
  let counter: SlidingCounterState | undefined;
  let n = 0;
  for (const nowMs of run.arrivalsMs) {
    const ctx = { nowMs, cost: run.cost };
    let allowed: boolean;
    if (algorithm === "log") {
      const r = slidingWindowLog(log, limit, ctx);
      log = r.nextState;
      allowed = r.outcome.allowed;
    } else {
      const r = slidingWindowCounter(counter, limit, ctx);
      counter = r.nextState;
      allowed = r.outcome.allowed;
    }
    if (allowed && nowMs >= run.countFromMs) n += run.cost;
  }
  return n;
}

const pct = (f: number) => `${(f * 100).toFixed(1)}%`;

export function accuracyRemedy(run: Run & { precision: number; tolerance: number }): AccuracyRemedy {
  const exact = admitted(run, "log");
  const deviationAt = (k: number) => (exact > 0 ? Math.abs(admitted(run, "counter", k) - exact) / exact : 0);
  const asIs = deviationAt(run.precision);
  for (const k of REMEDY_PRECISIONS) {
    if (k <= run.precision) continue;
    const d = deviationAt(k);
    if (d <= run.tolerance) return { change: `precision: ${k}`, deviation: d, asIs, text: `precision: ${k} (${pct(d)} on the same arrivals; as is ${pct(asIs)})` };
  }
  return { change: "algorithm: sliding_window_log", deviation: 0, asIs, text: `algorithm: sliding_window_log (exact; no precision up to 60 came within ${pct(run.tolerance)} on the same arrivals; as is ${pct(asIs)})` };
}

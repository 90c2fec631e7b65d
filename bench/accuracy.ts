/**
 * `npm run bench:accuracy` — how closely sliding_window_counter tracks the exact sliding_window_log.
 *
 * Traces (seeded, reproducible): Poisson arrivals, and bursty on/off traffic (exponential on and
 * off periods averaging half a window each, Poisson at twice the mean rate while on), at 0.5×–5×
 * the limit, for limits 10, 100 and 1,000, many independent subjects per cell (each with its own
 * counters). Every request costs 1 and time is in ms with a 60 s window.
 * Per cell, for the counter with precision 1 (the seed's formula) and with precision k:
 * - admitted ÷ the log's admitted (per-request agreement is no measure under overload: two correct
 *   limiters admit different requests; admissions are);
 * - the largest count it admitted in any true sliding window, as a multiple of the limit;
 * - requests it denied from subjects the exact log never denied (false denials).
 */
import { slidingWindowCounter, type SlidingCounterState } from "../lib/policy/algorithms/sliding-window-counter";
import { slidingWindowLog, type SlidingLogState } from "../lib/policy/algorithms/sliding-window-log";
import type { AlgorithmLimit } from "../lib/policy/algorithms/types";

const WINDOW_MS = 60_000;
const WINDOWS = 30;
const LIMITS = [10, 100, 1_000];
const LOADS = [0.5, 0.8, 1, 1.6, 2, 3, 5];
const PRECISIONS = [1, 2, 4, 6, 10, 20];
const REPORTED_PRECISION = Number(process.env.PRECISION ?? 10);

function rng(seed: number): () => number {
  // mulberry32
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const exp = (random: () => number, mean: number) => -Math.log(1 - random()) * mean;

type Trace = "poisson" | "on/off";

/** Integer ms arrival times over WINDOWS windows, starting at a random offset in a window. */
function trace(kind: Trace, ratePerMs: number, random: () => number): number[] {
  const start = Math.floor(random() * WINDOW_MS);
  const end = start + WINDOWS * WINDOW_MS;
  const out: number[] = [];
  let t = start;
  if (kind === "poisson") {
    for (;;) {
      t += exp(random, 1 / ratePerMs);
      if (t >= end) return out;
      out.push(Math.floor(t));
    }
  }
  let on = random() < 0.5;
  while (t < end) {
    const periodEnd = t + exp(random, WINDOW_MS / 2);
    if (on) {
      for (;;) {
        t += exp(random, 1 / (2 * ratePerMs));
        if (t >= periodEnd || t >= end) break;
        out.push(Math.floor(t));
      }
    }
    t = periodEnd;
    on = !on;
  }
  return out;
}

/** The exact log for cost-1 requests as a queue: same answers as slidingWindowLog, O(1) amortised. */
function exactLog(arrivals: number[], limit: number): boolean[] {
  const admitted: number[] = [];
  let head = 0;
  return arrivals.map((t) => {
    while (head < admitted.length && admitted[head] <= t - WINDOW_MS) head++;
    if (admitted.length - head + 1 > limit) return false;
    admitted.push(t);
    return true;
  });
}

function counter(arrivals: number[], limit: AlgorithmLimit): boolean[] {
  let state: SlidingCounterState | undefined;
  return arrivals.map((nowMs) => {
    const r = slidingWindowCounter(state, limit, { nowMs, cost: 1 });
    if (r.outcome.allowed) state = r.nextState;
    return r.outcome.allowed;
  });
}

function maxInAnyWindow(arrivals: number[], admitted: boolean[]): number {
  const times = arrivals.filter((_, i) => admitted[i]);
  let best = 0;
  let head = 0;
  for (let i = 0; i < times.length; i++) {
    while (times[head] <= times[i] - WINDOW_MS) head++;
    best = Math.max(best, i - head + 1);
  }
  return best;
}

interface CellResult {
  ratio: number;
  maxMultiple: number;
  falseDenials: number;
}

function runCell(limit: number, load: number, kind: Trace, precisions: number[]): Map<number, CellResult> {
  const subjects = Math.max(3, Math.round(1_000 / limit));
  const random = rng(limit * 1_000 + load * 10 + (kind === "poisson" ? 1 : 2));
  const totals = new Map<number, { admitted: number; max: number; falseDenials: number }>();
  let logAdmitted = 0;
  for (let s = 0; s < subjects; s++) {
    const arrivals = trace(kind, (load * limit) / WINDOW_MS, random);
    const log = exactLog(arrivals, limit);
    const logNeverDenied = log.every(Boolean);
    logAdmitted += log.filter(Boolean).length;
    for (const precision of precisions) {
      const admitted = counter(arrivals, { limit, windowMs: WINDOW_MS, burst: limit, precision, mode: "reject", maxDelayMs: 0, leaseTtlMs: 0 });
      const t = totals.get(precision) ?? { admitted: 0, max: 0, falseDenials: 0 };
      t.admitted += admitted.filter(Boolean).length;
      t.max = Math.max(t.max, maxInAnyWindow(arrivals, admitted));
      if (logNeverDenied) t.falseDenials += admitted.filter((a) => !a).length;
      totals.set(precision, t);
    }
  }
  const out = new Map<number, CellResult>();
  for (const [precision, t] of totals) {
    out.set(precision, { ratio: t.admitted / logAdmitted, maxMultiple: t.max / limit, falseDenials: t.falseDenials });
  }
  return out;
}

/** The queue-based log must agree with the pure slidingWindowLog: checked on a short trace. */
function selfCheck(): void {
  const arrivals = trace("on/off", 20 / WINDOW_MS, rng(7)).slice(0, 2_000);
  const fast = exactLog(arrivals, 10);
  let state: SlidingLogState | undefined;
  const limit: AlgorithmLimit = { limit: 10, windowMs: WINDOW_MS, burst: 10, precision: 1, mode: "reject", maxDelayMs: 0, leaseTtlMs: 0 };
  arrivals.forEach((nowMs, i) => {
    const r = slidingWindowLog(state, limit, { nowMs, cost: 1 });
    if (r.outcome.allowed) state = r.nextState;
    if (r.outcome.allowed !== fast[i]) throw new Error(`exact log mismatch at request ${i}`);
  });
}

const pct = (ratio: number) => `${ratio >= 1 ? "+" : ""}${((ratio - 1) * 100).toFixed(2)}%`;

function main(): void {
  selfCheck();
  const k = REPORTED_PRECISION;
  const results: { limit: number; load: number; kind: Trace; byPrecision: Map<number, CellResult> }[] = [];
  for (const limit of LIMITS) {
    for (const load of LOADS) {
      for (const kind of ["poisson", "on/off"] as const) {
        results.push({ limit, load, kind, byPrecision: runCell(limit, load, kind, PRECISIONS) });
      }
    }
  }
  console.log(`## sliding_window_counter vs exact sliding_window_log (window 60 s, ${WINDOWS} windows per subject)\n`);
  console.log(`| limit | load | trace | admitted ÷ log (k=1) | max in any window ÷ limit (k=1) | false denials (k=1) | admitted ÷ log (k=${k}) | max ÷ limit (k=${k}) | false denials (k=${k}) |`);
  console.log("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of results) {
    const a = r.byPrecision.get(1)!;
    const b = r.byPrecision.get(k)!;
    console.log(
      `| ${r.limit} | ${r.load}× | ${r.kind} | ${pct(a.ratio)} | ${a.maxMultiple.toFixed(2)} | ${a.falseDenials} | ${pct(b.ratio)} | ${b.maxMultiple.toFixed(2)} | ${b.falseDenials} |`,
    );
  }
  console.log(`\n## Worst admitted ÷ log deviation over all loads and both traces, by precision\n`);
  console.log(`| limit | ${PRECISIONS.map((p) => `k=${p}`).join(" | ")} |`);
  console.log(`| ---: | ${PRECISIONS.map(() => "---:").join(" | ")} |`);
  for (const limit of LIMITS) {
    const cells = results.filter((r) => r.limit === limit);
    const worst = PRECISIONS.map((p) => Math.max(...cells.map((c) => Math.abs(c.byPrecision.get(p)!.ratio - 1))));
    console.log(`| ${limit} | ${worst.map((w) => `${(w * 100).toFixed(2)}%`).join(" | ")} |`);
  }
  const falseDenials = PRECISIONS.map((p) => results.reduce((s, r) => s + r.byPrecision.get(p)!.falseDenials, 0));
  console.log(`| false denials, all cells | ${falseDenials.join(" | ")} |`);
}

main();

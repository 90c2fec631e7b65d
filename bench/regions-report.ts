/**
 * `npm run bench:regions`' arithmetic and tables (bench/regions.ts runs the regions): the answers of
 * one phase filed per window, admitted ÷ limit, the under-admission, the bound of `shared` per window,
 * and the markdown report.
 */
import type { Checked } from "../worker/testing/regions";

export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export interface PhaseResult {
  mode: string;
  phase: string;
  /** Per window: all regions' demand ÷ limit, admitted ÷ limit, under-admission ((min(demand, L) − admitted) ÷ L). */
  demandRatios: number[];
  ratios: number[];
  under: number[];
  /** Per window: L × (1 + ε) with ε from the lag p99 (meaningful for `shared`). */
  bounds: number[];
  admitted: number[];
  /** Admitted per region, mean per window. */
  perRegion: Record<string, number>;
  /** Answers whose send and arrival fell in different windows (see windowOf). */
  straddled: number;
  /** Answers decided without the store (the failure mode's path, never counted): admitted ones are in `admitted`. */
  degraded: number;
  /** `local`, `split`: per window, the sum of the regions' counters as read from their Redis (bench/regions.ts watchCounters). */
  countedInRedis?: number[];
  /** The p99 of the answers' latency (ms from sending to arriving). */
  p99LatencyMs: number;
}

export interface PhaseInput {
  mode: string;
  phase: string;
  regions: readonly string[];
  limit: number;
  windowMs: number;
  startMs: number;
  windows: number;
  answers: readonly { region: number; c: Checked }[];
  /** The replication lag to take for ε (ms). */
  lagSpanMs: number;
  /** The region whose link is cut in this phase, if any: `shared`'s bound is then the linked regions' among themselves (docs/regions.md, "A partial cut"). */
  cut?: string;
  mostInSpan: (sortedMs: readonly number[], spanMs: number) => number;
}

/**
 * The fixed window (index from the phase's start) an answer was decided in: the one its send and
 * arrival both fall in; for one that straddles boundaries (a slow answer), the window whose end lies
 * `resetSeconds` (the store's own time to the window's end, rounded up to a second) after some
 * instant between its send and its arrival; if still ambiguous, an admitted answer by its
 * `remaining` (a window's admissions count its budget down: more than half left means a later
 * window), else the midpoint.
 */
export function windowOf(c: Checked, startMs: number, windowMs: number): { w: number; straddled: boolean } {
  const sent = Math.floor((c.sentMs - startMs) / windowMs);
  const at = Math.floor((c.atMs - startMs) / windowMs);
  if (sent === at) return { w: at, straddled: false };
  const candidates: number[] = [];
  for (let w = sent; w <= at; w++) {
    const endMs = startMs + (w + 1) * windowMs;
    // The decision's instant, by its reset: in [end − reset s, end − (reset − 1) s).
    const lo = Math.max(c.sentMs, endMs - c.resetSeconds * 1000);
    const hi = Math.min(c.atMs, endMs - (c.resetSeconds - 1) * 1000, endMs);
    if (c.resetSeconds > 0 && lo < hi) candidates.push(w);
  }
  if (candidates.length === 1) return { w: candidates[0]!, straddled: true };
  if (c.allowed && c.limit > 0 && candidates.length > 1) return { w: c.remaining * 2 >= c.limit ? candidates.at(-1)! : candidates[0]!, straddled: true };
  return { w: Math.floor(((c.sentMs + c.atMs) / 2 - startMs) / windowMs), straddled: true };
}

export function windowStats(p: PhaseInput): PhaseResult {
  const n = p.regions.length;
  const cells = Array.from({ length: p.windows }, () => ({ demand: 0, admitted: 0, at: p.regions.map((): number[] => []), perRegion: new Array<number>(n).fill(0), maxLatencyMs: 0 }));
  let straddled = 0;
  let degraded = 0;
  const latencies: number[] = [];
  for (const { region, c } of p.answers) {
    const { w, straddled: across } = windowOf(c, p.startMs, p.windowMs);
    if (w < 0 || w >= p.windows) continue;
    if (across) straddled++;
    if (c.degraded) degraded++;
    latencies.push(c.atMs - c.sentMs);
    const cell = cells[w]!;
    cell.demand++;
    cell.maxLatencyMs = Math.max(cell.maxLatencyMs, c.atMs - c.sentMs);
    if (c.allowed) {
      cell.admitted++;
      cell.perRegion[region]!++;
      cell.at[region]!.push(c.atMs);
    }
  }
  // ε = (R − 1) × ρ × lag ÷ L; with a region cut, over the regions still linked (the cut one enforces its last share, which they give up).
  const linked = p.regions.map((_, i) => i).filter((i) => p.regions[i] !== p.cut);
  const bounds = cells.map((cell) => {
    const inLag = Math.max(...linked.map((i) => p.mostInSpan([...cell.at[i]!].sort((a, b) => a - b), p.lagSpanMs + cell.maxLatencyMs)));
    const r = linked.length;
    return Math.floor(p.limit * (1 + Math.min(r - 1, ((r - 1) * inLag) / p.limit)));
  });
  return {
    mode: p.mode,
    phase: p.phase,
    demandRatios: cells.map((c) => c.demand / p.limit),
    ratios: cells.map((c) => c.admitted / p.limit),
    under: cells.map((c) => Math.max(0, Math.min(c.demand, p.limit) - c.admitted) / p.limit),
    bounds,
    admitted: cells.map((c) => c.admitted),
    perRegion: Object.fromEntries(p.regions.map((r, i) => [r, cells.reduce((s, c) => s + c.perRegion[i]!, 0) / p.windows])),
    straddled,
    degraded,
    p99LatencyMs: quantile(latencies, 0.99),
  };
}

const pct = (x: number) => `${Math.round(x * 100)} %`;

export interface ReportInput {
  command: string;
  startedAt: Date;
  loads: [string, string];
  limit: number;
  windowMs: number;
  configs: {
    regions: string[];
    results: PhaseResult[];
    lag: { p50: number; p99: number; max: number; samples: number; readyzMaxMs: number };
    replication: { batches: number; bytes: number; seconds: number; entriesPerBatch: number };
  }[];
}

export function renderReport(r: ReportInput): string {
  const out: string[] = [
    "",
    `\`${r.command}\` — ${r.startedAt.toISOString().slice(0, 16).replace("T", " ")} UTC, load average ${r.loads[0]} at the start, ${r.loads[1]} at the end`,
    `(one fixed_window limit L = ${r.limit} per ${r.windowMs / 1000} s per mode; open-loop traffic; "worst" is the window furthest above the limit, or for under-admission below it)`,
  ];
  for (const c of r.configs) {
    out.push(
      "",
      `**${c.regions.length} regions** (${c.regions.join(", ")}; ${c.regions.slice(1).join(" and ")} reach NATS through the latency proxy). Replication lag, ${c.lag.samples} probes: p50 ${c.lag.p50} ms, **p99 ${c.lag.p99} ms**, max ${c.lag.max} ms (/readyz lagMs after the steady phases at most ${c.lag.readyzMaxMs} ms). Answers straddling a window boundary (filed by their remaining): ${c.results.reduce((n, p) => n + p.straddled, 0)}; decided without the store (past the 1 s budget: the failure mode's path, not counted): ${c.results.reduce((n, p) => n + p.degraded, 0)}; answers' p99 latency per phase ${Math.min(...c.results.map((p) => p.p99LatencyMs))}–${Math.max(...c.results.map((p) => p.p99LatencyMs))} ms.`,
      "",
      "| mode | phase | demand ÷ L | admitted ÷ L, median | worst window | under-admission, median · worst | admitted per window by region (mean) | local, split: worst window in Redis · shared: worst window of its bound L × (1 + ε) |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
    );
    for (const p of c.results) {
      const worstIdx = p.ratios.indexOf(Math.max(...p.ratios));
      const boundCell =
        p.mode === "shared"
          ? `${p.admitted[worstIdx]} of ${p.bounds[worstIdx]}${p.phase.includes("cut") ? " (eu on its last share, the others on L minus it)" : ""}${p.admitted.some((a, i) => a > p.bounds[i]!) ? " (over in some window)" : ""}`
          : p.countedInRedis
              ? `${pct(Math.max(...p.countedInRedis) / r.limit)} (${Math.max(...p.countedInRedis)})`
              : "—";
      out.push(
        `| ${p.mode} | ${p.phase} | ${(quantile(p.demandRatios, 0.5)).toFixed(1)} | ${pct(quantile(p.ratios, 0.5))} | ${pct(Math.max(...p.ratios))} | ${pct(quantile(p.under, 0.5))} · ${pct(Math.max(...p.under))} | ${Object.entries(p.perRegion)
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(" · ")} | ${boundCell} |`,
      );
    }
    const w = c.replication;
    if (w.batches > 0)
      out.push(
        "",
        `Replication on the wire (shared, 90/10 at 3×, ${w.seconds.toFixed(1)} s): ${w.batches} batches, ${(w.batches / w.seconds).toFixed(1)}/s, mean ${(w.bytes / w.batches).toFixed(0)} bytes a batch (subject, headers and JSON body) with ${w.entriesPerBatch.toFixed(2)} entries.`,
      );
  }
  return out.join("\n");
}

/**
 * `sluice nfr` and the /nfr page: a published policy as a table of non-functional requirements,
 * one row per tier × operation × scope (limits, then quotas), per global cap, and per tenant
 * override. Consistent with the policy by construction: every number in a row is either read
 * from the compiled document or found by running the limit through the engine's own code
 * (lib/services/justify/limit-probe.ts) — the boundary ("the N-th allowed, the N+1-th rejected"), the
 * burst at a window edge, the delays, the headers.
 */
import { formatDurationMs } from "../../policy/duration";
import type { CompiledLimit, CompiledOperation, CompiledPolicy, CompiledQuota, CompiledTier } from "../../policy/compiled";
import { formatPercent, heldToExactLog, requirementsForLimit } from "../../policy/requirements";
import { ANY_OPERATION } from "../../policy/types";
import { probeLimit, type ProbedRow, type ProbeResult } from "./limit-probe";

export const NFR_FORMATS = ["markdown", "csv", "json"] as const;
export type NfrFormat = (typeof NFR_FORMATS)[number];

export interface NfrRow {
  tier: string;
  /** Set on a tenant override's row. */
  tenant: string | null;
  operation: string;
  scope: string;
  kind: "limit" | "quota" | "global cap";
  limit: string;
  window: string;
  algorithm: string;
  mode: string;
  /** "the N-th request allowed, the N+1-th rejected", in the limit's own terms. */
  boundary: string;
  /** What the algorithm admits across a window edge (or its burst). */
  edgeBurst: string;
  quota: string;
  failureMode: string;
  /** Shaping limits: the most a request waits. */
  delaySla: string;
  headers: string;
  /** The accuracy tolerance it is held to (approximate limits), from the requirements block. */
  accuracy: string;
}

export const NFR_COLUMNS: { key: keyof NfrRow; title: string }[] = [
  { key: "tier", title: "Tier" },
  { key: "tenant", title: "Tenant" },
  { key: "operation", title: "Operation" },
  { key: "scope", title: "Scope" },
  { key: "kind", title: "Kind" },
  { key: "limit", title: "Limit" },
  { key: "window", title: "Window" },
  { key: "algorithm", title: "Algorithm" },
  { key: "mode", title: "Mode" },
  { key: "boundary", title: "Boundary" },
  { key: "edgeBurst", title: "Burst at a window edge" },
  { key: "quota", title: "Quota and overage" },
  { key: "failureMode", title: "Failure mode" },
  { key: "delaySla", title: "Delay SLA" },
  { key: "headers", title: "Headers" },
  { key: "accuracy", title: "Accuracy" },
];

const n = (x: number) => x.toLocaleString("en-US");
const ordinal = (x: number) => {
  const s = x % 100 >= 11 && x % 100 <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[x % 10] ?? "th";
  return `${n(x)}${s}`;
};
const operationLabel = (op: string) => (op === ANY_OPERATION ? "* (every operation)" : op);

function costOf(doc: CompiledPolicy, operation: string): number {
  return operation === ANY_OPERATION ? 1 : (doc.operations[operation]?.cost ?? 1);
}

/** The failure mode(s) that apply to a row's requests. */
function failureModeOf(doc: CompiledPolicy, operation: string): string {
  if (operation !== ANY_OPERATION) return doc.operations[operation]?.failureMode ?? doc.defaults.failureMode;
  const others = Object.values(doc.operations).filter((o: CompiledOperation) => o.failureMode !== doc.defaults.failureMode);
  const byMode = new Map<string, string[]>();
  for (const o of others) byMode.set(o.failureMode, [...(byMode.get(o.failureMode) ?? []), o.name]);
  const exceptions = [...byMode].map(([mode, ops]) => `${mode}: ${ops.join(", ")}`);
  return exceptions.length === 0 ? doc.defaults.failureMode : `${doc.defaults.failureMode}, except ${exceptions.join("; ")}`;
}

function unitsNote(cost: number): string {
  return cost > 1 ? ` of cost ${cost}` : "";
}

function windowOf(l: CompiledLimit): string {
  const w = formatDurationMs(l.windowMs);
  switch (l.algorithm) {
    case "fixed_window":
      return `${w}, fixed (epoch-aligned, resets at each edge)`;
    case "sliding_window_log":
      return `${w}, sliding (exact log)`;
    case "sliding_window_counter":
      return l.precision > 1 ? `${w}, sliding (${l.precision} sub-windows of ${formatDurationMs(Math.floor(l.windowMs / l.precision))}, oldest weighted)` : `${w}, sliding (previous window weighted)`;
    case "token_bucket":
    case "leaky_bucket":
      return `refills ${n(l.limit)} per ${w}, continuously`;
    case "concurrency":
      return `leases expire after ${formatDurationMs(l.leaseTtlMs)} unless released`;
  }
}

function algorithmOf(l: CompiledLimit): string {
  if (l.algorithm === "sliding_window_counter") return `sliding_window_counter (precision ${l.precision})`;
  if (l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket") return `${l.algorithm} (burst ${n(l.burst)})`;
  return l.algorithm;
}

function limitText(l: CompiledLimit): string {
  if (l.algorithm === "concurrency") return `${n(l.limit)} in flight`;
  return `${n(l.limit)} per ${formatDurationMs(l.windowMs)}`;
}

function boundaryText(p: ProbeResult, cost: number, what: "limit" | "quota" | "cap"): string {
  const units = unitsNote(cost);
  const at = p.admittedAtOnce;
  const next = p.next;
  if (!next) return `${n(at)} requests${units} admitted at once; none rejected`;
  const immediate = at - p.delayed;
  const lead =
    p.delayed > 0
      ? `${n(immediate)} requests${units} pass at once, the next ${n(p.delayed)} wait (up to ${n(p.maxDelayMs)} ms)`
      : `the ${ordinal(at)} request${units} is allowed`;
  if (next.shadowDenied) return `${lead}; the ${ordinal(at + 1)} is reported (shadowDenied: true) but never rejected`;
  const when =
    next.reason === "concurrency_limited"
      ? "until a lease is released or expires"
      : what === "quota"
        ? "until the period ends"
        : `Retry-After ${n(next.retryAfterSeconds)} s`;
  return `${lead}, the ${ordinal(at + 1)} rejected (${next.status} ${next.reason}, ${when})`;
}

function edgeText(p: ProbeResult, limitUnits: number, l?: CompiledLimit): string {
  if (l && (l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket")) {
    return `a burst of ${n(l.burst)} at once from a full bucket, then ${n(l.limit)} per ${formatDurationMs(l.windowMs)}; no window edge`;
  }
  if (l?.algorithm === "concurrency") return `no window: at most ${n(l.limit)} at any instant`;
  if (p.edgeBurstUnits === null) return "—";
  const ratio = p.edgeBurstUnits / limitUnits;
  const shadow = l?.mode === "shadow" ? " if it were enforced" : "";
  const base = `${n(p.edgeBurstUnits)} units within 2 ms across an edge${shadow} (${ratio.toFixed(2)}× the limit)`;
  if (l?.algorithm === "sliding_window_counter") {
    return `${base}; traffic timed against the weighting can reach up to 2× in one window length`;
  }
  return base;
}

function headersText(p: ProbeResult): string {
  const policy = p.headersAllowed["RateLimit-Policy"];
  if (!policy) return "none (shadow: RateLimit headers name only enforced limits)";
  const denied = p.headersDenied?.["Retry-After"] ? "; Retry-After when rejected" : "";
  return `RateLimit-Policy: ${policy}; RateLimit: ${p.headersAllowed.RateLimit?.split(";")[0]};r=…;t=…; RateLimit-Limit, -Remaining, -Reset${denied}`;
}

async function limitRow(doc: CompiledPolicy, tier: CompiledTier, l: CompiledLimit, tenant: string | null): Promise<NfrRow> {
  const cost = costOf(doc, l.operation);
  const p = await probeLimit({ kind: "limit", tier, limit: l }, cost);
  const req = requirementsForLimit(doc.requirements, { ...l, tier: tier.name });
  return {
    tier: tier.name,
    tenant,
    operation: operationLabel(l.operation),
    scope: l.scope,
    kind: "limit",
    limit: limitText(l),
    window: windowOf(l),
    algorithm: algorithmOf(l),
    mode: l.mode === "delay" ? `delay (max ${formatDurationMs(l.maxDelayMs)})` : l.mode,
    boundary: boundaryText(p, cost, "limit"),
    edgeBurst: edgeText(p, l.limit, l),
    quota: "—",
    failureMode: failureModeOf(doc, l.operation),
    delaySla: l.mode === "delay" ? `waits at most ${formatDurationMs(l.maxDelayMs)} (answer's delayMs); past it, 429` : "—",
    headers: headersText(p),
    accuracy: heldToExactLog(l.algorithm, req.boundaryBurst.value)
      ? `within ${formatPercent(req.accuracy.value)} of an exact log`
      : l.algorithm === "sliding_window_log"
        ? "exact"
        : l.algorithm === "fixed_window"
          ? "not held to an exact log (edge bursts allowed)"
          : "—",
  };
}

async function quotaRow(doc: CompiledPolicy, tier: CompiledTier, q: CompiledQuota, tenant: string | null): Promise<NfrRow> {
  const cost = costOf(doc, q.operation);
  const p = await probeLimit({ kind: "quota", tier, quota: q }, cost);
  const period = q.period === "month" ? "calendar month, UTC" : "calendar day, UTC";
  return {
    tier: tier.name,
    tenant,
    operation: operationLabel(q.operation),
    scope: "tenant",
    kind: "quota",
    limit: `${n(q.limit)} per ${q.period}`,
    window: period,
    algorithm: "quota (calendar counter)",
    mode: "reject",
    boundary: q.overage === "bill" ? `never rejected: past ${n(q.limit)} units, each unit is billed as overage` : boundaryText(p, cost, "quota"),
    edgeBurst: `resets to ${n(q.limit)} at the start of each ${q.period}`,
    quota: `${n(q.limit)} per ${q.period}, overage ${q.overage}`,
    failureMode: failureModeOf(doc, q.operation),
    delaySla: "—",
    headers: headersText(p),
    accuracy: "exact",
  };
}

/**
 * The tiers in reading order: by fair-share weight, lightest first (a stored document's tiers come
 * back from PostgreSQL's jsonb in its own key order, not the file's), ties in document order.
 */
function tiersInOrder(doc: CompiledPolicy): CompiledTier[] {
  return Object.values(doc.tiers).sort((a, b) => a.weight - b.weight);
}

/** The rows of a published document: tiers by weight, each in its document order. */
export async function nfrRows(doc: CompiledPolicy): Promise<NfrRow[]> {
  const rows: NfrRow[] = [];
  for (const tier of tiersInOrder(doc)) {
    for (const l of tier.limits) rows.push(await limitRow(doc, tier, l, null));
    for (const q of tier.quotas) rows.push(await quotaRow(doc, tier, q, null));
  }
  const weights = tiersInOrder(doc).map((t) => ({ name: t.name, weight: t.weight }));
  const totalWeight = weights.reduce((s, t) => s + t.weight, 0);
  for (const cap of doc.globalCaps) {
    const tier = tiersInOrder(doc)[0];
    if (!tier) break;
    const p = await probeLimit({ kind: "global", tier, cap } as ProbedRow, costOf(doc, cap.operation));
    const shares = cap.share === "weighted" && totalWeight > 0
      ? `; under contention each tier's tenants get their weight's share: ${weights.map((t) => `${t.name} ${n(Math.floor((cap.limit * t.weight) / totalWeight))}`).join(", ")} per window (one active tenant per tier)`
      : "";
    rows.push({
      tier: "(all tiers)",
      tenant: null,
      operation: operationLabel(cap.operation),
      scope: "global",
      kind: "global cap",
      limit: `${n(cap.limit)} per ${formatDurationMs(cap.windowMs)}`,
      window: `${formatDurationMs(cap.windowMs)}, fixed (epoch-aligned)`,
      algorithm: cap.share === "weighted" ? "weighted fair share" : "shared counter",
      mode: "reject",
      boundary: boundaryText(p, costOf(doc, cap.operation), "cap") + shares,
      edgeBurst: edgeText(p, cap.limit),
      quota: "—",
      failureMode: failureModeOf(doc, cap.operation),
      delaySla: "—",
      headers: headersText(p),
      accuracy: "—",
    });
  }
  for (const tenant of Object.values(doc.tenants)) {
    const tier = doc.tiers[tenant.tier];
    if (!tier) continue;
    for (const o of tenant.overrides) {
      const until = o.expiresAtMs === null ? "" : ` (until ${new Date(o.expiresAtMs).toISOString()})`;
      const row = o.kind === "limit" ? await limitRow(doc, tier, o.limit, tenant.slug) : await quotaRow(doc, tier, o.quota, tenant.slug);
      rows.push({ ...row, limit: row.limit + until });
    }
  }
  return rows;
}

function csvCell(value: string | null): string {
  const v = value ?? "";
  return /[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

export function formatNfrCsv(rows: NfrRow[]): string {
  const lines = [NFR_COLUMNS.map((c) => c.key).join(",")];
  for (const r of rows) lines.push(NFR_COLUMNS.map((c) => csvCell(r[c.key])).join(","));
  return `${lines.join("\n")}\n`;
}

export function formatNfrMarkdown(rows: NfrRow[], doc: Pick<CompiledPolicy, "version" | "checksum" | "createdAt">): string {
  const cell = (v: string | null) => (v ?? "").replace(/\|/g, "\\|").replace(/\n/g, " ");
  const columns = NFR_COLUMNS.filter((c) => c.key !== "tenant" || rows.some((r) => r.tenant !== null));
  const lines = [
    `# Non-functional requirements — policy v${doc.version}`,
    "",
    `Published ${doc.createdAt}, checksum ${doc.checksum.slice(0, 12)}. Generated from the policy by \`sluice nfr\`: every row is the policy's own numbers, and the boundary, edge burst, delays and headers are what the decision engine does with them.`,
    "",
    `| ${columns.map((c) => c.title).join(" | ")} |`,
    `| ${columns.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${columns.map((c) => cell(r[c.key])).join(" | ")} |`),
    "",
  ];
  return lines.join("\n");
}

const rowsByChecksum = new Map<string, Promise<NfrRow[]>>();

/**
 * The rows of a published version (a document is immutable, so its rows are computed once per
 * process and kept, for the few versions anyone looks at).
 */
export function nfrRowsOf(doc: CompiledPolicy): Promise<NfrRow[]> {
  let rows = rowsByChecksum.get(doc.checksum);
  if (!rows) {
    if (rowsByChecksum.size >= 20) rowsByChecksum.clear();
    rows = nfrRows(doc);
    rows.catch(() => rowsByChecksum.delete(doc.checksum));
    rowsByChecksum.set(doc.checksum, rows);
  }
  return rows;
}

/** `sluice nfr`: the version's table in the format asked for. */
export async function nfrDocument(doc: CompiledPolicy, format: NfrFormat): Promise<string> {
  const rows = await nfrRowsOf(doc);
  if (format === "csv") return formatNfrCsv(rows);
  if (format === "json") return `${JSON.stringify({ version: doc.version, checksum: doc.checksum, rows }, null, 2)}\n`;
  return formatNfrMarkdown(rows, doc);
}

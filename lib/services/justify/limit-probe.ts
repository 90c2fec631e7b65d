/**
 * What one limit does, found by running it: the same check planning (lib/decision/checks.ts), the
 * same algorithms (the in-process store, lib/store/memory.ts, the pure twins of the Redis scripts)
 * and the same answer and headers (lib/decision/answer.ts) the decision server uses, on a clock of
 * our own. `sluice nfr` and its page state these numbers, so the table is consistent with the
 * policy by construction; `sluice certify` compares a real decision server with them.
 *
 * A probe isolates the limit: a synthetic tenant whose effective limits are this one only.
 */
import { answerFromStore, type DecisionAnswer } from "../../decision/answer";
import { planChecks } from "../../decision/checks";
import { IN_PROCESS } from "../../policy/counter-keys";
import type { EffectiveLimits } from "../../policy/effective-limits";
import type { CompiledGlobalCap, CompiledLimit, CompiledQuota, CompiledTenant, CompiledTier } from "../../policy/compiled";
import { createMemoryStore } from "../../store/memory";

/** A fixed instant, a multiple of every window a policy can name (ms … days): 2026-01-05 00:00 UTC is a Monday. */
const EPOCH_MS = Date.UTC(2026, 0, 5);
const KEY_HASH = "0".repeat(64);
const IP = "198.51.100.7";

export type ProbedRow =
  | { kind: "limit"; tier: CompiledTier; limit: CompiledLimit }
  | { kind: "quota"; tier: CompiledTier; quota: CompiledQuota }
  | { kind: "global"; tier: CompiledTier; cap: CompiledGlobalCap };

export interface ProbeResult {
  /** Requests of `cost` admitted at once from a fresh state (a fresh window, a full bucket, no leases). */
  admittedAtOnce: number;
  /** Of those, how many were delayed (delay mode: admitted with delayMs > 0). */
  delayed: number;
  /** The largest delayMs among them. */
  maxDelayMs: number;
  /** The first request past them: rejected (429) or, in shadow mode, admitted and reported. */
  next: { status: number; reason: string; shadowDenied: boolean; retryAfterSeconds: number } | null;
  /** Headers of the first admitted request and of the first rejected one. */
  headersAllowed: Record<string, string>;
  headersDenied: Record<string, string> | null;
  /**
   * Units admitted within 2 ms across a window edge: as many as pass 1 ms before an edge, then as
   * many as pass 1 ms after it. Null for limits without windows (buckets, leases, quotas).
   */
  edgeBurstUnits: number | null;
}

function syntheticTenant(tier: CompiledTier): CompiledTenant {
  return { slug: "probe", name: "Probe", tier: tier.name, status: "active", overrides: [] };
}

function effectiveOf(row: ProbedRow, operation: string): EffectiveLimits {
  const base = { tenant: syntheticTenant(row.tier), operation, limits: [] as CompiledLimit[], quotas: [] as CompiledQuota[], globalCaps: [] as CompiledGlobalCap[] };
  if (row.kind === "limit") return { ...base, tier: { ...row.tier, limits: [row.limit], quotas: [] }, limits: [row.limit] };
  if (row.kind === "quota") return { ...base, tier: { ...row.tier, limits: [], quotas: [row.quota] }, quotas: [row.quota] };
  return { ...base, tier: { ...row.tier, limits: [], quotas: [] }, globalCaps: [row.cap] };
}

/** The most requests of `cost` that may be admitted at once, to bound the probe. */
function ceilingUnits(row: ProbedRow): number {
  if (row.kind === "limit") {
    const l = row.limit;
    const bucket = l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket";
    const delayed = l.mode === "delay" && l.windowMs > 0 ? Math.ceil((l.maxDelayMs * l.limit) / l.windowMs) : 0;
    return (bucket ? l.burst : l.limit) + delayed;
  }
  return row.kind === "quota" ? row.quota.limit : row.cap.limit;
}

/** Runs the probe for one row; `cost` is its operation's cost (1 for `*` rows). */
export async function probeLimit(row: ProbedRow, cost: number, operation = "probe"): Promise<ProbeResult> {
  const effective = effectiveOf(row, operation);
  const planned = planChecks({ effective, keyHash: KEY_HASH, ip: IP, prefix: IN_PROCESS });
  const checks = planned.map((p) => p.check);
  const ctx = { tenant: "probe", tier: row.tier.name, operation, policyVersion: 0 };
  let nowMs = EPOCH_MS;
  const store = createMemoryStore({ clock: () => nowMs });
  const ask = async (c: number, dryRun = false): Promise<DecisionAnswer> =>
    answerFromStore(ctx, await store.check(checks, { cost: c, dryRun }), planned, { explain: false, dryRun });

  // Fresh state. Up to a few thousand requests one by one; beyond, one large request takes all but
  // the last one's units (the same count: every algorithm here is additive in cost), then one by one.
  const perRequest = Math.max(1, cost);
  const expected = Math.floor(ceilingUnits(row) / perRequest);
  let admittedAtOnce = 0;
  let delayed = 0;
  let maxDelayMs = 0;
  let headersAllowed: Record<string, string> = {};
  let headersDenied: Record<string, string> | null = null;
  let next: ProbeResult["next"] = null;
  const bulk = expected > 1_000 && !(row.kind === "limit" && row.limit.mode === "delay") ? expected - 2 : 0;
  if (bulk > 0) {
    const first = await ask(perRequest * bulk);
    if (first.allowed) {
      admittedAtOnce = bulk;
      headersAllowed = first.headers;
    }
  }
  // At most one past the expected count: a row that never rejects (overage: bill) stops there.
  while (next === null && admittedAtOnce <= expected) {
    const a = await ask(perRequest);
    if (a.allowed && !a.shadowDenied) {
      if (admittedAtOnce === 0) headersAllowed = a.headers;
      admittedAtOnce++;
      if (a.delayMs > 0) {
        delayed++;
        maxDelayMs = Math.max(maxDelayMs, a.delayMs);
      }
    } else {
      next = { status: a.status, reason: a.reason, shadowDenied: a.shadowDenied === true, retryAfterSeconds: a.retryAfterSeconds };
      if (!a.allowed) headersDenied = a.headers;
    }
  }

  // A window edge: everything that passes 1 ms before it, then everything that passes 1 ms after.
  let edgeBurstUnits: number | null = null;
  const windowed = row.kind === "global" || (row.kind === "limit" && ["fixed_window", "sliding_window_log", "sliding_window_counter"].includes(row.limit.algorithm));
  if (windowed) {
    const windowMs = row.kind === "global" ? row.cap.windowMs : row.kind === "limit" ? row.limit.windowMs : 0;
    const edge = EPOCH_MS + 100 * windowMs;
    const edgeStore = createMemoryStore({ clock: () => nowMs });
    // A shadow limit never rejects: its edge is what it would enforce (and report).
    const enforced = checks.map(({ spec: _spec, ...c }) => (c.mode === "shadow" ? { ...c, mode: "reject" as const } : c));
    const fits = async (units: number) => (await edgeStore.check(enforced, { cost: units, dryRun: true })).allowed;
    const take = async () => {
      // The largest cost that passes now, by bisection on dry runs, then taken for real.
      let lo = 0;
      let hi = ceilingUnits(row);
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (await fits(mid)) lo = mid;
        else hi = mid - 1;
      }
      if (lo > 0) await edgeStore.check(enforced, { cost: lo, dryRun: false });
      return lo;
    };
    nowMs = edge - 1;
    const before = await take();
    nowMs = edge + 1;
    edgeBurstUnits = before + (await take());
  }
  await store.close();
  return { admittedAtOnce, delayed, maxDelayMs, next, headersAllowed, headersDenied, edgeBurstUnits };
}

/**
 * Units admitted, in requests of `perRequest` sent one after another, `beforeMs` before a window
 * edge and then `offsetMs` after it (certification's edge probe, whose instants are known to a few
 * ms). A limit in shadow mode is probed as if enforced.
 */
export async function edgeBurstRequests(row: ProbedRow, perRequest: number, windowMs: number, offsetMs: number, beforeMs = offsetMs): Promise<number> {
  const planned = planChecks({ effective: effectiveOf(row, "probe"), keyHash: KEY_HASH, ip: IP, prefix: IN_PROCESS });
  const checks = planned.map(({ check: { spec: _spec, ...c } }) => (c.mode === "shadow" ? { ...c, mode: "reject" as const } : c));
  let nowMs = 0;
  const store = createMemoryStore({ clock: () => nowMs });
  const edge = EPOCH_MS + 100 * windowMs;
  let admitted = 0;
  for (const at of [edge - beforeMs, edge + offsetMs]) {
    nowMs = at;
    for (let i = 0; i <= ceilingUnits(row); i++) {
      if (!(await store.check(checks, { cost: perRequest, dryRun: false })).allowed) break;
      admitted += perRequest;
    }
  }
  await store.close();
  return admitted;
}

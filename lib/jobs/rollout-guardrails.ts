/**
 * The guardrails of a rollout beyond the cohort-against-control comparison (compareCohort in
 * lib/services/rollout/compare-cohort.ts), judged on the same drained minute (docs/control-plane.md#guarded-rollout):
 *
 * - per tenant: a cohort tenant's 429 share (429s only, lib/db/rollout-usage-repo.ts) more than
 *   `maxTenantDenyShareIncrease` points above its own in the 30 minutes before the rollout started
 *   (or, when it had no traffic then, the control's share this minute);
 * - store errors, as the `redis_errors` alert defines them (lib/jobs/alerts.ts): errors and
 *   timeouts at least 1% of the minute's decisions, or any breaker opening;
 * - the reject path's latency: the minute's p95 of denied decisions above `maxRejectP95Ms` (else the
 *   candidate's requirements.rejectP95, default 50 ms), with at least `minDecisions` of them.
 *
 * Store errors and latency are recorded per decision server, not per version: they are judged on
 * everyone's figures of the minute, since a rollout that slows or breaks the store shows there.
 * `judgeGuardrails` is pure; the queries beside it read the minute's rollup rows.
 */
import type { Db } from "../db/client";
import { usageByTenant } from "../db/rollout-usage-repo";
import { pgTs } from "../db/usage-repo";
import { DEFAULT_REJECT_P95_MS } from "../policy/requirements";
import type { RolloutGuardrails } from "../policy/rollout";
import type { GuardCheck } from "../services/rollout/rollout-view";
import { histogramQuantile } from "../services/observe/usage-dashboard";
import { REDIS_ERROR_SHARE } from "./alerts";

/** How far back a tenant's own share is measured before the rollout started. */
export const TENANT_BASELINE_MS = 30 * 60_000;

/** One guardrail the minute broke (GuardCheck.breaches): its name, what no longer held with the figures, the tenants that tripped it. */
export type Breach = NonNullable<GuardCheck["breaches"]>[number];

export interface SystemFigures {
  /** Store errors and timeouts, breaker openings, and every decision, in the minute. */
  errors: number;
  breaker: number;
  decisions: number;
  /** The reject path's latency histogram of the minute (lib/redis/usage.ts LATENCY_BUCKETS_MS). */
  rejectLatency: number[];
}

/** Decisions and the 429s among them (`denied`). */
type Share = { total: number; denied: number };
const share = (s: Share) => (s.total > 0 ? s.denied / s.total : 0);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The cohort tenants whose own 429 share jumped more than the guardrail allows, with their figures. */
export function trippedTenants(perTenant: ReadonlyMap<string, Share>, baseline: ReadonlyMap<string, Share>, controlShare: number, g: Pick<RolloutGuardrails, "maxTenantDenyShareIncrease" | "minDecisions">) {
  const out: { tenant: string; share: number; before: number; jumpPoints: number }[] = [];
  for (const [tenant, now] of perTenant) {
    if (now.total < g.minDecisions) continue;
    const base = baseline.get(tenant);
    const before = base && base.total >= g.minDecisions ? share(base) : controlShare;
    const jumpPoints = (share(now) - before) * 100;
    if (jumpPoints > g.maxTenantDenyShareIncrease) out.push({ tenant, share: share(now), before, jumpPoints });
  }
  return out.sort((a, b) => b.jumpPoints - a.jumpPoints || (a.tenant < b.tenant ? -1 : 1));
}

/** Every guardrail of `g` that the minute breaks, besides the cohort-against-control one. */
export function judgeGuardrails(input: {
  perTenant: ReadonlyMap<string, Share>;
  baseline: ReadonlyMap<string, Share>;
  controlShare: number;
  system: SystemFigures;
  guardrails: RolloutGuardrails;
  /** The candidate's requirements.rejectP95 (ms), if it has one. */
  requiredRejectP95Ms: number | null;
}): Breach[] {
  const g = input.guardrails;
  const breaches: Breach[] = [];
  const tripped = trippedTenants(input.perTenant, input.baseline, input.controlShare, g);
  if (tripped.length > 0) {
    const shown = tripped.slice(0, 20).map((t) => `${t.tenant} ${pct(t.share)} (before ${pct(t.before)}, +${t.jumpPoints.toFixed(1)} points)`);
    breaches.push({
      guardrail: "tenant_429_share",
      message: `a tenant's 429 share at most ${g.maxTenantDenyShareIncrease} points above its own before the rollout: ${shown.join(", ")}${tripped.length > 20 ? ", …" : ""}`,
      tenants: tripped.map((t) => t.tenant),
    });
  }
  const s = input.system;
  const errorShare = s.decisions > 0 ? s.errors / s.decisions : s.errors > 0 ? 1 : 0;
  if (g.storeErrors && ((s.errors > 0 && errorShare >= REDIS_ERROR_SHARE) || s.breaker > 0)) {
    breaches.push({ guardrail: "store_errors", message: `store errors below ${pct(REDIS_ERROR_SHARE)} of decisions and no breaker opening: ${s.errors} errors and timeouts (${pct(errorShare)} of ${s.decisions}), ${s.breaker} breaker opening(s)`, tenants: [] });
  }
  const limitMs = g.maxRejectP95Ms ?? input.requiredRejectP95Ms ?? DEFAULT_REJECT_P95_MS;
  const rejected = s.rejectLatency.reduce((a, b) => a + (b ?? 0), 0);
  const p95 = rejected >= g.minDecisions ? histogramQuantile(s.rejectLatency, 0.95) : null;
  if (p95 !== null && p95 > limitMs) {
    breaches.push({ guardrail: "reject_latency", message: `reject-path p95 at most ${limitMs} ms: ${p95} ms over ${rejected} denied decisions`, tenants: [] });
  }
  return breaches;
}

/** Each tenant's decisions and 429s in the 30 minutes before the minute `startMs` falls in (that minute already saw the rollout). */
export async function tenantBaseline(db: Db, startMs: number): Promise<Map<string, Share>> {
  const endMs = Math.floor(startMs / 60_000) * 60_000;
  const rows = await usageByTenant(db, endMs - TENANT_BASELINE_MS, endMs);
  return new Map([...rows].map(([tenant, r]) => [tenant, { total: r.total, denied: r.denied429 }]));
}

/** The minute's store errors, breaker openings, decisions and reject-path latency histogram (system and tier-total rows). */
export async function systemFigures(db: Db, minuteMs: number): Promise<SystemFigures> {
  const rows = await db.$queryRawUnsafe<{ operation: string; outcome: string; n: bigint }[]>(
    `SELECT CASE WHEN "tenant" LIKE '*:%' THEN 'decisions' ELSE "operation" END AS operation, CASE WHEN "tenant" LIKE '*:%' THEN '' ELSE "outcome" END AS outcome, sum("count")::bigint AS n
       FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "bucketStart" = $1::timestamp(3)
        AND (("tenant" = '' AND "operation" IN ('error', 'latency:denied')) OR "tenant" LIKE '*:%')
      GROUP BY 1, 2`,
    pgTs(minuteMs),
  );
  const out: SystemFigures = { errors: 0, breaker: 0, decisions: 0, rejectLatency: [] };
  for (const r of rows) {
    const n = Number(r.n);
    if (r.operation === "decisions") out.decisions += n;
    else if (r.operation === "error" && (r.outcome === "redis_error" || r.outcome === "redis_timeout")) out.errors += n;
    else if (r.operation === "error" && r.outcome === "breaker_open") out.breaker += n;
    else if (r.operation === "latency:denied") out.rejectLatency[Number(r.outcome)] = (out.rejectLatency[Number(r.outcome)] ?? 0) + n;
  }
  for (let i = 0; i < out.rejectLatency.length; i++) out.rejectLatency[i] ??= 0;
  return out;
}

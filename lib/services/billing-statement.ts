/**
 * Builds a month's billing statement: live from quota usage while the month is open (provisional),
 * from the lines frozen at close plus the adjustments recorded since once it is closed (final).
 */
import {
  adjustmentsOf,
  billingPeriod,
  frozenLines,
  monthRangeMs,
  quotaUsageOfMonth,
  tenantNames,
  tierHistoryOfMonth,
  type Client,
  type TierSpan,
} from "../db/billing-repo";
import { effectiveQuotas, PolicyHistory, type QuotaDef } from "../jobs/quota-defs";
import type { Statement, StatementAdjustment, StatementLine } from "./billing-format";

export interface QuotaInfo {
  def: QuotaDef;
  tier: string;
}

/** Every quota id any published version defined, with its definition and tier (newest version wins). */
export async function quotaCatalog(policies: PolicyHistory): Promise<Map<string, QuotaInfo>> {
  const out = new Map<string, QuotaInfo>();
  for (const v of await policies.load()) {
    for (const [tierName, tier] of Object.entries(v.doc.tiers)) {
      for (const q of tier.quotas) if (!out.has(q.id)) out.set(q.id, { def: q, tier: tierName });
    }
    for (const t of Object.values(v.doc.tenants)) {
      for (const o of t.overrides) {
        if (o.kind === "quota" && "quota" in o) {
          const q = o.quota as QuotaDef;
          if (!out.has(q.id)) out.set(q.id, { def: q, tier: t.tier });
        }
      }
    }
  }
  return out;
}

function overageOf(def: QuotaDef, usedByPeriod: Map<string, bigint>): bigint {
  if (def.overage !== "bill") return 0n;
  let total = 0n;
  for (const used of usedByPeriod.values()) if (used > BigInt(def.limit)) total += used - BigInt(def.limit);
  return total;
}

/** Lines computed from quota usage (what is frozen at close). Sorted by tenant, then quota id. */
export async function computeLines(client: Client, month: string): Promise<StatementLine[]> {
  const { endMs } = monthRangeMs(month);
  const policies = new PolicyHistory(client);
  const catalog = await quotaCatalog(policies);
  const atEnd = await policies.at(endMs - 1);
  const usage = await quotaUsageOfMonth(client, month);
  const names = await tenantNames(client);
  const history = await tierHistoryOfMonth(client, month);

  const keyed = new Map<string, { tenant: string; quotaId: string; periods: Map<string, bigint>; used: bigint; denied: bigint }>();
  const entry = (tenant: string, quotaId: string) => {
    const k = `${tenant}\u0000${quotaId}`;
    let e = keyed.get(k);
    if (!e) {
      e = { tenant, quotaId, periods: new Map(), used: 0n, denied: 0n };
      keyed.set(k, e);
    }
    return e;
  };
  // Every tenant of the policy live at month end gets its quotas, used or not (included units are billed too).
  if (atEnd) {
    for (const slug of Object.keys(atEnd.doc.tenants)) {
      for (const q of effectiveQuotas(atEnd.doc, slug, null, endMs - 1)) entry(slug, q.id);
    }
  }
  for (const row of usage) {
    const e = entry(row.tenant, row.quotaId);
    e.periods.set(row.period, (e.periods.get(row.period) ?? 0n) + row.used);
    e.used += row.used;
    e.denied += row.denied;
  }

  const lines: StatementLine[] = [];
  // The tenant's own effective quotas at month end win over the catalog: an override shares its
  // quota id with the tier's quota it replaces, but has its own limit.
  const effective = new Map<string, QuotaDef>();
  if (atEnd) for (const slug of Object.keys(atEnd.doc.tenants)) for (const q of effectiveQuotas(atEnd.doc, slug, null, endMs - 1)) effective.set(`${slug}\u0000${q.id}`, q);
  for (const e of keyed.values()) {
    const own = effective.get(`${e.tenant}\u0000${e.quotaId}`);
    const fromCatalog = catalog.get(e.quotaId);
    const info = own ? { def: own, tier: fromCatalog?.tier ?? "" } : fromCatalog;
    const def: QuotaDef = info?.def ?? { id: e.quotaId, operation: "?", period: e.periods.keys().next().value?.length === 10 ? "day" : "month", limit: 0, overage: "block" };
    const spans: TierSpan[] = history.get(e.tenant) ?? [];
    const tenantInfo = names.get(e.tenant);
    lines.push({
      tenant: e.tenant,
      tenantName: tenantInfo?.name ?? atEnd?.doc.tenants[e.tenant]?.name ?? e.tenant,
      tier: info?.tier ?? tenantInfo?.tier ?? "",
      tierHistory: spans.map((s) => ({ tier: s.tier, from: s.from, to: s.to })),
      quotaId: e.quotaId,
      operation: def.operation,
      quotaPeriod: def.period,
      limit: def.limit,
      overage: def.overage,
      used: Number(e.used),
      overageUnits: Number(overageOf(def, e.periods)),
      denied: Number(e.denied),
    });
  }
  return lines.sort((a, b) => (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : a.quotaId < b.quotaId ? -1 : a.quotaId > b.quotaId ? 1 : 0));
}

/** The statement as exported now: provisional (live) while open, final (frozen + adjustments) once closed. */
export async function buildStatement(client: Client, month: string): Promise<Statement> {
  const period = await billingPeriod(client, month);
  if (period?.status !== "closed") {
    return { period: month, status: "provisional", revision: 0, lines: await computeLines(client, month), adjustments: [] };
  }
  const frozen = await frozenLines(client, month);
  const lines: StatementLine[] = frozen.map((l) => ({
    tenant: l.tenant,
    tenantName: l.tenantName,
    tier: l.tier,
    tierHistory: Array.isArray(l.tierHistory) ? (l.tierHistory as unknown as StatementLine["tierHistory"]) : [],
    quotaId: l.quotaId,
    operation: l.operation,
    quotaPeriod: l.quotaPeriod === "day" ? "day" : "month",
    limit: Number(l.limit),
    overage: l.overage === "bill" ? "bill" : "block",
    used: Number(l.used),
    overageUnits: Number(l.overageUnits),
    denied: Number(l.denied),
  }));
  const base = new Map(lines.map((l) => [`${l.tenant}\u0000${l.quotaId}`, l]));
  // Running totals per line, so an adjustment's overage is exactly the overage it adds.
  const running = new Map<string, number>();
  const grouped = new Map<string, StatementAdjustment>();
  for (const a of await adjustmentsOf(client, month)) {
    const k = `${a.tenant}\u0000${a.quotaId}`;
    const g = `${a.revision}\u0000${k}`;
    const line = base.get(k);
    const existing = grouped.get(g);
    if (existing) {
      existing.used += Number(a.used);
      existing.denied += Number(a.denied);
      continue;
    }
    grouped.set(g, {
      revision: a.revision,
      tenant: a.tenant,
      tenantName: line?.tenantName ?? a.tenant,
      tier: line?.tier ?? "",
      tierHistory: line?.tierHistory ?? [],
      quotaId: a.quotaId,
      operation: line?.operation ?? "?",
      quotaPeriod: line?.quotaPeriod ?? "month",
      limit: line?.limit ?? 0,
      overage: line?.overage ?? "block",
      used: Number(a.used),
      overageUnits: 0,
      denied: Number(a.denied),
    });
  }
  const adjustments = [...grouped.values()];
  for (const a of adjustments) {
    const k = `${a.tenant}\u0000${a.quotaId}`;
    const before = running.get(k) ?? base.get(k)?.used ?? 0;
    const after = before + a.used;
    running.set(k, after);
    // Day quotas: the late minute's day is not kept per adjustment, so no overage is derived for them.
    if (a.overage === "bill" && a.quotaPeriod === "month") a.overageUnits = Math.max(0, after - a.limit) - Math.max(0, before - a.limit);
  }
  return { period: month, status: "final", revision: period.revision, lines, adjustments };
}

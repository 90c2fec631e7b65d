/**
 * Builds a month's billing statement: live from quota usage while the month is open (provisional),
 * from the lines frozen at close plus the adjustments recorded since once it is closed (final).
 *
 * Which lines a month has: one per tenant × quota that applied to the tenant at some moment of the
 * month — used or not — plus any tenant × quota with recorded usage. A tenant "exists in the month"
 * when it is in a policy version in force during the month (the one live at its start, or one
 * published before its end): so tenants published after the month ended get no line, suspended
 * tenants do (they are still customers; requests while suspended are answered 403 before any quota
 * is checked, so they add to neither `used` nor `denied`), and tenants deleted during the month do,
 * for the quotas they had while they existed. A tenant never published has no quota in force and
 * so no line. docs/observability-and-billing.md states the same for finance.
 *
 * A tenant on its own billing period (an anchor, a time zone, or a billing change) has instead a
 * line per quota for each of its periods whose last local day falls in the month, with the period's
 * dates (./billing-period-lines.ts).
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
} from "../../db/billing-repo";
import { effectiveQuotas, PolicyHistory, type PolicyAt, type PolicyQuotaDoc, type QuotaDef } from "../../db/quota-defs";
import { z } from "zod";
import type { LinePeriod, Statement, StatementAdjustment, StatementLine } from "./statement";
import { periodLines, tenantPeriodsOfMonth } from "./billing-period-lines";

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

/** A computed line plus what is frozen with it but not exported. */
export interface ComputedLine extends StatementLine {
  /** Decisions denied for any reason on the operations the quota covers (BillingLine.denied). */
  deniedAnyReason: number;
}

/** The policy versions in force during [startMs, endMs), newest first, each with the end of its reign. */
export function versionsInForce(all: readonly PolicyAt[], startMs: number, endMs: number): { version: PolicyAt; untilMs: number }[] {
  const out: { version: PolicyAt; untilMs: number }[] = [];
  let untilMs = endMs;
  // `all` is newest first: walk back from the month's end until the version live at its start.
  for (const v of all) {
    if (v.createdAtMs >= endMs) continue;
    // A version replaced at the instant it was published (same timestamp) never was in force.
    if (untilMs > Math.max(startMs, v.createdAtMs)) out.push({ version: v, untilMs });
    if (v.createdAtMs <= startMs) break;
    untilMs = v.createdAtMs;
  }
  return out;
}

/**
 * Every tenant × quota that applied during the month, with the definition it had last (the tenant's
 * own override wins over the tier's quota: they share an id but not the limit) and the policy
 * document the tenant was last seen in (for its name once it is deleted).
 */
export function quotasInForce(all: readonly PolicyAt[], startMs: number, endMs: number) {
  const defs = new Map<string, QuotaDef>();
  const lastDoc = new Map<string, PolicyQuotaDoc>();
  for (const { version, untilMs } of versionsInForce(all, startMs, endMs)) {
    const fromMs = Math.max(startMs, version.createdAtMs);
    for (const slug of Object.keys(version.doc.tenants)) {
      if (!lastDoc.has(slug)) lastDoc.set(slug, version.doc);
      // Overrides expire: the quotas at the end of the version's reign, then those at its start.
      for (const atMs of [untilMs - 1, fromMs]) {
        for (const q of effectiveQuotas(version.doc, slug, null, atMs)) {
          const k = `${slug}\u0000${q.id}`;
          if (!defs.has(k)) defs.set(k, q);
        }
      }
    }
  }
  return { defs, lastDoc };
}

/**
 * Tenant × quota pairs where the tenant's own override of the quota (same id as its tier's, its
 * own allowance) was in force at some moment of the month: the export's `tenant_override`. From
 * the immutable policy history, so a closed month always marks the same lines.
 */
export function overriddenInMonth(all: readonly PolicyAt[], startMs: number, endMs: number): Set<string> {
  const out = new Set<string>();
  for (const { version } of versionsInForce(all, startMs, endMs)) {
    const fromMs = Math.max(startMs, version.createdAtMs);
    for (const [slug, tenant] of Object.entries(version.doc.tenants)) {
      for (const o of tenant.overrides) {
        if (o.kind !== "quota" || !("quota" in o)) continue;
        const { quota, expiresAtMs } = o as { quota: QuotaDef; expiresAtMs: number | null };
        if (expiresAtMs === null || expiresAtMs > fromMs) out.add(`${slug}\u0000${quota.id}`);
      }
    }
  }
  return out;
}

async function overridesOf(client: Client, month: string): Promise<Set<string>> {
  const { startMs, endMs } = monthRangeMs(month);
  return overriddenInMonth(await new PolicyHistory(client).load(), startMs, endMs);
}

const labelOf = (l: StatementLine) => l.billingPeriod?.label ?? "";

/** Sorted by tenant, then quota id, then tenant period (UTC-calendar lines have none). */
function byLine(a: StatementLine, b: StatementLine): number {
  const ka = [a.tenant, a.quotaId, labelOf(a)];
  const kb = [b.tenant, b.quotaId, labelOf(b)];
  for (let i = 0; i < 3; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return 0;
}

/**
 * When month `month` can close: its end, or the end of the last tenant period it holds if later
 * (a tenant anchored on the 1st in Los Angeles ends November at 08:00 UTC on December 1), plus the grace.
 */
export async function closeDueAtMs(client: Client, month: string, graceMs: number): Promise<number> {
  let endMs = monthRangeMs(month).endMs;
  for (const periods of tenantPeriodsOfMonth(await new PolicyHistory(client).load(), month).values()) {
    for (const p of periods) endMs = Math.max(endMs, p.endMs);
  }
  return endMs + graceMs;
}

/** Lines computed from quota usage (what is frozen at close). Sorted by tenant, then quota id, then tenant period. */
export async function computeLines(client: Client, month: string): Promise<ComputedLine[]> {
  const { startMs, endMs } = monthRangeMs(month);
  const policies = new PolicyHistory(client);
  const catalog = await quotaCatalog(policies);
  const all = await policies.load();
  // Tenants on their own billing periods get their lines from those periods, not the UTC month.
  const anchored = tenantPeriodsOfMonth(all, month);
  const inForce = quotasInForce(all, startMs, endMs);
  const usage = await quotaUsageOfMonth(client, month);
  const names = await tenantNames(client);
  const history = await tierHistoryOfMonth(client, month);
  const overridden = overriddenInMonth(await policies.load(), startMs, endMs);

  type Entry = { tenant: string; quotaId: string; periods: Map<string, bigint>; used: bigint; denied: bigint; deniedAnyReason: bigint };
  const keyed = new Map<string, Entry>();
  const entry = (tenant: string, quotaId: string) => {
    const k = `${tenant}\u0000${quotaId}`;
    let e = keyed.get(k);
    if (!e) {
      e = { tenant, quotaId, periods: new Map(), used: 0n, denied: 0n, deniedAnyReason: 0n };
      keyed.set(k, e);
    }
    return e;
  };
  // Every tenant × quota in force during the month gets its line, used or not (included units are billed too).
  for (const k of inForce.defs.keys()) {
    const [tenant, quotaId] = k.split("\u0000") as [string, string];
    if (!anchored.has(tenant)) entry(tenant, quotaId);
  }
  for (const row of usage) {
    if (anchored.has(row.tenant)) continue;
    const e = entry(row.tenant, row.quotaId);
    e.periods.set(row.period, (e.periods.get(row.period) ?? 0n) + row.used);
    e.used += row.used;
    e.denied += row.quotaDenied;
    e.deniedAnyReason += row.denied;
  }

  const lines: ComputedLine[] = [];
  for (const e of keyed.values()) {
    const own = inForce.defs.get(`${e.tenant}\u0000${e.quotaId}`);
    const fromCatalog = catalog.get(e.quotaId);
    const info = own ? { def: own, tier: fromCatalog?.tier ?? "" } : fromCatalog;
    const def: QuotaDef = info?.def ?? { id: e.quotaId, operation: "?", period: e.periods.keys().next().value?.length === 10 ? "day" : "month", limit: 0, overage: "block" };
    const spans: TierSpan[] = history.get(e.tenant) ?? [];
    const tenantInfo = names.get(e.tenant);
    lines.push({
      tenant: e.tenant,
      tenantName: tenantInfo?.name ?? inForce.lastDoc.get(e.tenant)?.tenants[e.tenant]?.name ?? e.tenant,
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
      deniedAnyReason: Number(e.deniedAnyReason),
      tenantOverride: overridden.has(`${e.tenant}\u0000${e.quotaId}`),
    });
  }
  const deps = {
    catalog,
    names,
    inForce: (fromMs: number, toMs: number) => quotasInForce(all, fromMs, toMs),
    overridden: (fromMs: number, toMs: number) => overriddenInMonth(all, fromMs, toMs),
  };
  for (const [tenant, periods] of anchored) lines.push(...(await periodLines(client, tenant, periods, deps)));
  return lines.sort(byLine);
}

const linePeriodSchema = z.object({ label: z.string(), timeZone: z.string(), start: z.string(), end: z.string(), startAt: z.string(), endAt: z.string() });
/** A frozen line's period as stored (BillingLine.billingPeriod); absent on UTC-calendar lines. */
function frozenPeriod(value: unknown): LinePeriod | undefined {
  const parsed = linePeriodSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** The statement as exported now: provisional (live) while open, final (frozen + adjustments) once closed. */
export async function buildStatement(client: Client, month: string): Promise<Statement> {
  const period = await billingPeriod(client, month);
  if (period?.status !== "closed") {
    return { period: month, status: "provisional", revision: 0, lines: await computeLines(client, month), adjustments: [] };
  }
  const frozen = await frozenLines(client, month);
  const overridden = await overridesOf(client, month);
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
    // Lines frozen before quota denials were recorded keep their old figure (any reason), so a
    // closed month re-exports the same bytes.
    denied: Number(l.quotaDenied ?? l.denied),
    tenantOverride: overridden.has(`${l.tenant}\u0000${l.quotaId}`),
    ...(l.periodLabel !== "" && frozenPeriod(l.billingPeriod) ? { billingPeriod: frozenPeriod(l.billingPeriod) } : {}),
  }));
  const base = new Map(lines.map((l) => [`${l.tenant}\u0000${l.quotaId}\u0000${labelOf(l)}`, l]));
  // A tenant on its own periods has each late minute twice: in its UTC month's adjustment and in
  // its period's; the export states the period's.
  const ownPeriods = new Set(lines.filter((l) => l.billingPeriod).map((l) => l.tenant));
  // Running totals per line, so an adjustment's overage is exactly the overage it adds.
  const running = new Map<string, number>();
  const grouped = new Map<string, StatementAdjustment>();
  for (const a of await adjustmentsOf(client, month)) {
    if (a.periodLabel === "" && ownPeriods.has(a.tenant)) continue;
    const k = `${a.tenant}\u0000${a.quotaId}\u0000${a.periodLabel}`;
    const g = `${a.revision}\u0000${k}`;
    const line = base.get(k);
    const existing = grouped.get(g);
    if (existing) {
      existing.used += Number(a.used);
      existing.denied += Number(a.quotaDenied ?? a.denied);
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
      denied: Number(a.quotaDenied ?? a.denied),
      tenantOverride: line?.tenantOverride ?? overridden.has(`${a.tenant}\u0000${a.quotaId}`),
      ...(line?.billingPeriod ? { billingPeriod: line.billingPeriod } : {}),
    });
  }
  const adjustments = [...grouped.values()];
  for (const a of adjustments) {
    const k = `${a.tenant}\u0000${a.quotaId}\u0000${labelOf(a)}`;
    const before = running.get(k) ?? base.get(k)?.used ?? 0;
    const after = before + a.used;
    running.set(k, after);
    // Day quotas: the late minute's day is not kept per adjustment, so no overage is derived for them.
    if (a.overage === "bill" && a.quotaPeriod === "month") a.overageUnits = Math.max(0, after - a.limit) - Math.max(0, before - a.limit);
  }
  return { period: month, status: "final", revision: period.revision, lines, adjustments };
}

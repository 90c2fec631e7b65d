/**
 * Which quotas apply to a tenant's decisions, read from the published policy documents
 * (PolicyVersion.document, the compiled policy). Parsed leniently with zod: only the fields the
 * jobs need, so a newer document shape never stops the rollup.
 */
import { z } from "zod";
import type { Db, Tx } from "./client";
import { billingMonthOf, OWN_SHARE_SUFFIX } from "../policy/billing-month";
import { billingPeriod, type BillingPeriod } from "../policy/billing-period";

const quotaSchema = z.object({
  id: z.string(),
  operation: z.string(),
  period: z.enum(["day", "month"]),
  limit: z.number(),
  overage: z.enum(["block", "bill"]).catch("block"),
});
export type QuotaDef = z.infer<typeof quotaSchema>;

const overrideSchema = z.union([
  z.object({ kind: z.literal("quota"), operation: z.string(), period: z.enum(["day", "month"]), quota: quotaSchema, expiresAtMs: z.number().nullable().catch(null) }),
  z.object({ kind: z.string() }).loose(),
]);

const billingSchema = z.object({ anchor: z.string(), timeZone: z.string() });
/** A tenant's billing and its last change (lib/policy/billing-period.ts); unreadable: none. */
const billingFields = {
  billing: billingSchema.optional().catch(undefined),
  billingChange: z.object({ atMs: z.number(), previous: billingSchema.nullable() }).optional().catch(undefined),
};

const docSchema = z
  .object({
    tiers: z.record(z.string(), z.object({ quotas: z.array(quotaSchema).catch([]) }).loose()).catch({}),
    tenants: z
      .record(
        z.string(),
        z.object({ slug: z.string(), name: z.string().catch(""), tier: z.string(), overrides: z.array(overrideSchema).catch([]), ...billingFields }).loose(),
      )
      .catch({}),
  })
  .loose();
export type PolicyQuotaDoc = z.infer<typeof docSchema>;

export interface PolicyAt {
  version: number;
  createdAtMs: number;
  doc: PolicyQuotaDoc;
}

/** The tenant's effective quotas at `atMs`: its tier's, each replaced by an unexpired override for the same operation and period. */
export function effectiveQuotas(doc: PolicyQuotaDoc, tenant: string, tierName: string | null, atMs: number): QuotaDef[] {
  const t = doc.tenants[tenant];
  const tier = tierName && doc.tiers[tierName] ? tierName : t?.tier;
  const base = (tier ? doc.tiers[tier]?.quotas : undefined) ?? [];
  const overrides: QuotaDef[] = [];
  for (const o of t?.overrides ?? []) {
    if (o.kind !== "quota" || !("quota" in o)) continue;
    const q = o as { quota: QuotaDef; expiresAtMs: number | null };
    if (q.expiresAtMs !== null && q.expiresAtMs <= atMs) continue;
    overrides.push(q.quota);
  }
  const result = base.filter((b) => !overrides.some((o) => o.operation === b.operation && o.period === b.period));
  return [...result, ...overrides].sort((a, b) => a.id.localeCompare(b.id));
}

export function quotaCovers(q: QuotaDef, operation: string): boolean {
  return q.operation === "*" || q.operation === operation;
}

/**
 * Whether `tenant`'s quotas of `period` count, at `atMs`, in the UTC calendar period the jobs
 * label (quotaPeriodKey): true without billing; false for an anchored tenant, whose counter is
 * of its own period (lib/policy/quota-window.ts), which QuotaUsage's UTC months do not describe.
 */
export function countsOnUtcCalendar(doc: PolicyQuotaDoc | undefined, tenant: string, period: "day" | "month", atMs: number): boolean {
  return tenantPeriodLabel(doc, tenant, period, atMs) === quotaPeriodKey(period, atMs);
}

/** The label of `tenant`'s own `period` containing `atMs` (its counter's suffix); the UTC label without billing. */
export function tenantPeriodLabel(doc: PolicyQuotaDoc | undefined, tenant: string, period: "day" | "month", atMs: number): string {
  return tenantPeriodOf(doc, tenant, period, atMs)?.label ?? quotaPeriodKey(period, atMs);
}

/** `tenant`'s own `period` containing `atMs` as the document states it; null without billing (the UTC calendar). */
export function tenantPeriodOf(doc: PolicyQuotaDoc | undefined, tenant: string, period: "day" | "month", atMs: number): BillingPeriod | null {
  const t = doc?.tenants[tenant];
  if (!t || (!t.billing && !t.billingChange)) return null;
  return billingPeriod(atMs, period, t.billing ?? null, t.billingChange ?? null);
}

/**
 * The rows one minute of a tenant's quota usage counts in: its UTC period's; and for a tenant on its
 * own billing period, that period's (the counter's label) and, for month quotas, the UTC month's
 * `#own` share — what of the UTC month row the tenant spent in its own periods, which the export
 * subtracts from the UTC row for a calendar month a billing change cut short.
 */
export function quotaRowsOf(doc: PolicyQuotaDoc, tenant: string, period: "day" | "month", atMs: number): { period: string; month: string; periodLabel: string }[] {
  const utc = quotaPeriodKey(period, atMs);
  const own = tenantPeriodOf(doc, tenant, period, atMs);
  const rows = [{ period: utc, month: utc.slice(0, 7), periodLabel: "" }];
  if (own === null || own.label === utc) return rows;
  if (period === "day") return [...rows, { period: own.label, month: "", periodLabel: own.label }];
  return [...rows, { period: own.label, month: billingMonthOf(own), periodLabel: own.label }, { period: `${utc}${OWN_SHARE_SUFFIX}`, month: "", periodLabel: "" }];
}

/** `2026-12` for month quotas, `2026-12-02` for day quotas (UTC). */
export function quotaPeriodKey(period: "day" | "month", atMs: number): string {
  const iso = new Date(atMs).toISOString();
  return period === "month" ? iso.slice(0, 7) : iso.slice(0, 10);
}

/** Loads published policy versions, newest first, parsed; cached by version for one job run. */
export class PolicyHistory {
  private versions: PolicyAt[] | null = null;
  constructor(private readonly client: Db | Tx) {}

  async load(): Promise<PolicyAt[]> {
    if (this.versions) return this.versions;
    const rows = await this.client.policyVersion.findMany({ orderBy: { version: "desc" }, select: { version: true, createdAt: true, document: true } });
    this.versions = rows.map((r) => ({ version: r.version, createdAtMs: r.createdAt.getTime(), doc: docSchema.parse(r.document ?? {}) }));
    return this.versions;
  }

  /** The version live at `atMs` (the newest published at or before it), else the oldest one, else null. */
  async at(atMs: number): Promise<PolicyAt | null> {
    const all = await this.load();
    return all.find((v) => v.createdAtMs <= atMs) ?? all[all.length - 1] ?? null;
  }
}

/**
 * Data access for the policy rows (operations, tiers, limits, quotas, global caps, tenants,
 * overrides, API keys, tokens, published versions). Tenant-owned rows are always looked up with
 * their tenant in the `where` (tenancy is in the signature).
 */
import { randomBytes } from "node:crypto";
import { formatDurationMs } from "../policy/duration";
import type { PolicySpec } from "../policy/compile";
import { envoyDomainSchema, rateLimitServiceSchema } from "../policy/envoy/schema";
import type { LimitSpec, OperationSpec, OverrideSpec, QuotaSpec } from "../policy/policy-file";
import type { PlanChangeRule } from "../policy/plan-change";
import { approvalSchema } from "../policy/approval";
import { requirementsSchema } from "../policy/requirements";
import type { Algorithm, FailureMode, Mode, Overage, Period, RegionMode, Scope, Share, TenantStatus } from "../policy/types";
import type { Tx } from "./client";

/** ID prefixes, one table: every row id is `<prefix>_<20 hex>`. */
export const ID_PREFIXES = {
  operation: "op",
  tier: "tier",
  limit: "lim",
  quota: "quo",
  globalCap: "cap",
  tenant: "ten",
  override: "ovr",
  apiKey: "key",
  apiToken: "tok",
  certificationReport: "cert",
  webhookEndpoint: "whk",
  envoyDomain: "env",
  rollout: "ro",
  approvalRequest: "apr",
} as const;

export function newId(kind: keyof typeof ID_PREFIXES): string {
  return `${ID_PREFIXES[kind]}_${randomBytes(10).toString("hex")}`;
}

/** A serializing lock for policy writes (apply, publish, rollback): one at a time, per database. */
export async function lockPolicy(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(4242001)`;
}

/** Everything Postgres holds about the policy, in file order (`position`). */
export async function loadPolicyRows(tx: Tx) {
  // Sequential on purpose: inside an interactive transaction all queries share one connection.
  const settings = await tx.policySettings.findUnique({ where: { id: 1 } });
  const operations = await tx.operation.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }] });
  const tiers = await tx.tier.findMany({
    orderBy: [{ position: "asc" }, { name: "asc" }],
    include: {
      limits: { orderBy: [{ position: "asc" }, { id: "asc" }] },
      quotas: { orderBy: [{ position: "asc" }, { id: "asc" }] },
    },
  });
  const globalCaps = await tx.globalCap.findMany({ orderBy: [{ position: "asc" }, { id: "asc" }] });
  const envoyDomains = await tx.envoyDomain.findMany({ orderBy: [{ position: "asc" }, { domain: "asc" }] });
  const tenants = await tx.tenant.findMany({
    orderBy: { slug: "asc" },
    include: {
      tier: { select: { name: true } },
      overrides: { orderBy: [{ position: "asc" }, { id: "asc" }] },
      apiKeys: { orderBy: [{ createdAt: "asc" }, { name: "asc" }] },
    },
  });
  return { settings, operations, tiers, globalCaps, tenants, envoyDomains };
}
export type PolicyRows = Awaited<ReturnType<typeof loadPolicyRows>>;

type LimitRow = PolicyRows["tiers"][number]["limits"][number];
type QuotaRow = PolicyRows["tiers"][number]["quotas"][number];
type OverrideRow = PolicyRows["tenants"][number]["overrides"][number];
type OperationRow = PolicyRows["operations"][number];

const dur = (ms: number | null | undefined) => (ms === null || ms === undefined ? undefined : formatDurationMs(ms));
const opt = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

export function operationRowToSpec(o: OperationRow): OperationSpec {
  return { name: o.name, match: [...o.match], cost: o.cost, failureMode: opt(o.failureMode as FailureMode | null) };
}

export function limitRowToSpec(l: LimitRow): LimitSpec {
  return {
    operation: l.operation,
    scope: l.scope as Scope,
    algorithm: l.algorithm as Algorithm,
    limit: l.limit,
    window: dur(l.windowMs),
    burst: opt(l.burst),
    precision: opt(l.precision),
    mode: l.mode as Mode,
    maxDelay: dur(l.maxDelayMs),
    leaseTtl: dur(l.leaseTtlMs),
    ...regionsOf(l.regions),
  };
}

/** The `regions` column as the spec spells it: absent for `local` (the default). */
function regionsOf(column: string): { regions?: RegionMode } {
  return column === "local" ? {} : { regions: column as RegionMode };
}

export function quotaRowToSpec(q: QuotaRow): QuotaSpec {
  return { operation: q.operation, period: q.period as Period, limit: Number(q.limit), overage: q.overage as Overage };
}

export function overrideRowToSpec(o: OverrideRow): OverrideSpec {
  return {
    operation: o.operation,
    scope: opt(o.scope as Scope | null),
    period: opt(o.period as Period | null),
    limit: Number(o.limit),
    algorithm: opt(o.algorithm as Algorithm | null),
    window: dur(o.windowMs),
    burst: opt(o.burst),
    overage: opt(o.overage as Overage | null),
    expiresAt: o.expiresAt ? o.expiresAt.toISOString() : undefined,
  };
}

/** The stored `requirements` block (written by apply, which validated it); undefined when absent. */
export function requirementsRowToSpec(settings: PolicyRows["settings"]): PolicySpec["requirements"] {
  if (settings?.requirements === null || settings?.requirements === undefined) return undefined;
  const parsed = requirementsSchema.safeParse(settings.requirements);
  if (!parsed.success) throw new Error(`PolicySettings.requirements does not validate: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** The stored `approval` block (written by apply, which validated it); undefined when absent. */
export function approvalRowToSpec(settings: PolicyRows["settings"]): PolicySpec["approval"] {
  if (settings?.approval === null || settings?.approval === undefined) return undefined;
  const parsed = approvalSchema.safeParse(settings.approval);
  if (!parsed.success) throw new Error(`PolicySettings.approval does not validate: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** A stored thresholds column (written by apply, which validated it): a list of percents, or undefined. */
function thresholdsOf(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.every((v) => Number.isSafeInteger(v)) ? (value as number[]) : undefined;
}

/**
 * The stored `rateLimitService` section (its settings and one document per domain, written by an
 * edit that validated them); undefined when there is none. Parsing also puts every document's
 * fields back in the schema's order (jsonb keeps its own), so exports read like the file.
 */
export function rateLimitServiceRowsToSpec(rows: Pick<PolicyRows, "settings" | "envoyDomains">): PolicySpec["rateLimitService"] {
  const stored = rows.settings?.rateLimitService;
  if ((stored === null || stored === undefined) && rows.envoyDomains.length === 0) return undefined;
  const domains = rows.envoyDomains.map((row) => {
    const parsed = envoyDomainSchema.safeParse(row.document);
    if (!parsed.success) throw new Error(`EnvoyDomain ${row.domain} does not validate: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  });
  const settings = typeof stored === "object" && stored !== null && !Array.isArray(stored) ? stored : {};
  const parsed = rateLimitServiceSchema.safeParse({ ...settings, domains });
  if (!parsed.success) throw new Error(`PolicySettings.rateLimitService does not validate: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** The rows as a policy in the file's shape (no keys): what export prints and publish compiles. */
export function rowsToSpec(rows: PolicyRows): PolicySpec {
  const requirements = requirementsRowToSpec(rows.settings);
  const rateLimitService = rateLimitServiceRowsToSpec(rows);
  const approval = approvalRowToSpec(rows.settings);
  return {
    version: 1,
    defaults: {
      failureMode: (rows.settings?.defaultFailureMode ?? "open") as FailureMode,
      ...(rows.settings?.planChange ? { planChange: rows.settings.planChange as PlanChangeRule } : {}),
    },
    operations: rows.operations.map(operationRowToSpec),
    tiers: rows.tiers.map((t) => ({
      name: t.name,
      weight: t.weight,
      ...(thresholdsOf(t.thresholds) ? { thresholds: thresholdsOf(t.thresholds) } : {}),
      limits: t.limits.map(limitRowToSpec),
      quotas: t.quotas.map(quotaRowToSpec),
    })),
    globalCaps: rows.globalCaps.map((g) => ({
      operation: g.operation,
      limit: g.limit,
      window: formatDurationMs(g.windowMs),
      share: g.share as Share,
      ...regionsOf(g.regions),
    })),
    tenants: rows.tenants.map((t) => ({
      slug: t.slug,
      name: t.name,
      tier: t.tier.name,
      status: t.status as TenantStatus,
      ...(t.billingAnchor && t.billingTimeZone ? { billing: { anchor: t.billingAnchor, timeZone: t.billingTimeZone } } : {}),
      ...(thresholdsOf(t.thresholds) ? { thresholds: thresholdsOf(t.thresholds) } : {}),
      overrides: t.overrides.map(overrideRowToSpec),
    })),
    ...(requirements ? { requirements } : {}),
    ...(rateLimitService ? { rateLimitService } : {}),
    ...(approval ? { approval } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// What publish writes to Redis

/**
 * The key index for Redis: sha256 → tenant slug for every unrevoked key of every tenant, suspended
 * ones included, so a suspended tenant's clients get 403 tenant_suspended rather than 401.
 */
export async function listKeyIndexEntries(tx: Tx): Promise<{ keyHash: string; tenant: string }[]> {
  const rows = await tx.apiKey.findMany({
    where: { revokedAt: null },
    select: { hash: true, tenant: { select: { slug: true } } },
    orderBy: { hash: "asc" },
  });
  return rows.map((r) => ({ keyHash: r.hash, tenant: r.tenant.slug }));
}

/** sha256 hex of every unrevoked service token (what the decision API accepts). */
export async function listServiceTokenHashes(tx: Tx): Promise<string[]> {
  const rows = await tx.apiToken.findMany({ where: { kind: "service", revokedAt: null }, select: { hash: true }, orderBy: { hash: "asc" } });
  return rows.map((r) => r.hash);
}

/** Every unrevoked tenant read token (never a service token: the decision API must refuse these). */
export async function listTenantTokenHashes(tx: Tx): Promise<{ tokenHash: string; tenant: string }[]> {
  const rows = await tx.apiToken.findMany({ where: { kind: "tenant", revokedAt: null }, select: { hash: true, tenant: true }, orderBy: { hash: "asc" } });
  return rows.flatMap((r) => (r.tenant ? [{ tokenHash: r.hash, tenant: r.tenant }] : []));
}

// ---------------------------------------------------------------------------------------------
// Published versions

export async function latestPolicyVersion(tx: Tx) {
  return tx.policyVersion.findFirst({ orderBy: { version: "desc" } });
}

export async function findPolicyVersion(tx: Tx, version: number) {
  return tx.policyVersion.findUnique({ where: { version } });
}

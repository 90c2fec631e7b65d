/**
 * `GET /v1/usage` (docs/decision-api.md): one tenant's limits and quotas as its counters hold them
 * now. The tenant is the read token's (nothing in the request names one), so nothing of another
 * tenant is ever read. The answer is lib/policy/tenant-usage-answer.ts's (the portal's), over each
 * quota's counters and a dry run of each tenant-wide limit: `remaining` is what a dry-run /v1/check answers.
 */
import type { CompiledPolicy } from "../policy/compiled";
import type { EffectiveLimits } from "../policy/effective-limits";
import { ANY_OPERATION } from "../policy/types";
import { buildUsageAnswer, usageReadPlan, type TenantUsageAnswer } from "../policy/tenant-usage-answer";
import type { CounterStore } from "../store/types";
import { planChecks } from "./checks";

/** What the mode's backend reads for GET /v1/usage. */
export interface TenantUsageReader {
  /** The tenant a read token (sha256 hex) may read; null: unknown or revoked. */
  tenantOfToken(tokenHash: string): Promise<string | null>;
  /** The values of these counter keys (absent: 0). */
  readCounters(keys: readonly string[]): Promise<Map<string, number>>;
}

export interface TenantUsageDeps {
  doc: CompiledPolicy;
  reader: TenantUsageReader;
  store: CounterStore;
  prefix: string;
  /** The store's clock as the engine estimates it (ms). */
  nowMs: number;
  /** The store budget of the dry run (ms). */
  timeoutMs: number;
}

/** The answer for `tenant`, or null when the policy in force has no such tenant. */
export async function readTenantUsageNow(deps: TenantUsageDeps, tenant: string): Promise<TenantUsageAnswer | null> {
  const { doc, nowMs, prefix } = deps;
  const plan = usageReadPlan(doc, tenant, nowMs, prefix);
  if (!plan) return null;
  const keys = plan.quotas.flatMap((q) => (q.carriedKey ? [q.counterKey, q.carriedKey] : [q.counterKey]));
  const counters = keys.length === 0 ? new Map<string, number>() : await deps.reader.readCounters(keys);

  // Tenant-wide limits have one counter for the tenant: a dry run of their checks says what is left.
  const tenantWide = plan.limits.filter((l) => l.scope === "tenant");
  const limitPeeks = new Map<string, { remaining: number; resetAtMs: number }>();
  if (tenantWide.length > 0) {
    const effective: EffectiveLimits = {
      tenant: doc.tenants[tenant]!,
      tier: doc.tiers[plan.tier]!,
      operation: ANY_OPERATION,
      limits: tenantWide,
      quotas: [],
      globalCaps: [],
    };
    const planned = planChecks({ effective, keyHash: null, ip: null, prefix, nowMs });
    const decision = await deps.store.check(planned.map((p) => p.check), { cost: 1, dryRun: true, timeoutMs: deps.timeoutMs });
    decision.outcomes.forEach((o, i) => limitPeeks.set(tenantWide[i]!.id, { remaining: Math.max(0, Math.floor(o.remaining)), resetAtMs: o.resetAtMs }));
  }
  return buildUsageAnswer(doc, plan, { counters, limitPeeks }, nowMs);
}

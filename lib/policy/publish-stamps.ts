/**
 * What publish adds to a compiled body that no policy file says: when a tenant's billing or tier
 * last changed. A change takes effect when it is published, so publish (and rollback, which
 * publishes too) compares the body with the live version and stamps each changed tenant with the
 * publish time; an unchanged tenant carries the live version's stamps on. A draft compiled and
 * stamped against the live version it equals has the live checksum (nothing to publish).
 *
 * Pure: the clock arrives as `nowMs`.
 */
import { canonicalJson } from "./checksum";
import type { CompiledPolicyBody, CompiledQuota, CompiledTenant } from "./compiled";
import { DEFAULT_PLAN_CHANGE_RULE, type CompiledPlanChange } from "./plan-change";

/** A tenant's quotas at `atMs`: its tier's, each replaced by an unexpired override of the same operation and period. */
export function tenantQuotasAt(doc: CompiledPolicyBody, tenant: CompiledTenant, atMs: number): CompiledQuota[] {
  const overrides = tenant.overrides.flatMap((o) => (o.kind === "quota" && (o.expiresAtMs === null || o.expiresAtMs > atMs) ? [o.quota] : []));
  const base = doc.tiers[tenant.tier]?.quotas ?? [];
  return [...base.filter((q) => !overrides.some((o) => o.operation === q.operation && o.period === q.period)), ...overrides];
}

function stampTenant(t: CompiledTenant, live: CompiledPolicyBody | null, nowMs: number, rule: CompiledPlanChange["rule"]): CompiledTenant {
  const { billingChange: _b, planChange: _p, ...plain } = t;
  const before = live && Object.hasOwn(live.tenants, t.slug) ? live.tenants[t.slug] : undefined;
  // A tenant new to the live version starts on its own periods: there is nothing to change from.
  if (!before) return plain;
  const out: CompiledTenant = { ...plain };
  if (canonicalJson(before.billing ?? null) !== canonicalJson(t.billing ?? null)) {
    out.billingChange = { atMs: nowMs, previous: before.billing ? { ...before.billing } : null };
  } else if (before.billingChange) {
    out.billingChange = structuredClone(before.billingChange);
  }
  if (before.tier !== t.tier) {
    const quotas = tenantQuotasAt(live!, before, nowMs).map((q) => ({ quotaId: q.id, operation: q.operation, period: q.period, limit: q.limit }));
    out.planChange = { atMs: nowMs, fromTier: before.tier, rule, quotas };
  } else if (before.planChange) {
    out.planChange = structuredClone(before.planChange);
  }
  return out;
}

/** `body` with every tenant's billing and plan change stamps set against `live` (the version it replaces). */
export function stampChanges(body: CompiledPolicyBody, live: CompiledPolicyBody | null, nowMs: number): CompiledPolicyBody {
  const rule = body.defaults.planChange ?? DEFAULT_PLAN_CHANGE_RULE;
  const tenants: CompiledPolicyBody["tenants"] = {};
  for (const [slug, t] of Object.entries(body.tenants)) tenants[slug] = stampTenant(t, live, nowMs, rule);
  return { ...body, tenants };
}

/** `body` without any change stamp: what the policy itself says (compare a rollback with the version it restores). */
export function withoutStamps(body: CompiledPolicyBody): CompiledPolicyBody {
  const tenants: CompiledPolicyBody["tenants"] = {};
  for (const [slug, { billingChange: _b, planChange: _p, ...t }] of Object.entries(body.tenants)) tenants[slug] = t;
  return { ...body, tenants };
}

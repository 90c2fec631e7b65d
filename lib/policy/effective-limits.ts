/**
 * What one request of one tenant is checked against: the tier's rows for its operation with the
 * tenant's live overrides applied (`limitsFor`), cached per compiled document. Called on every
 * decision (lib/decision/decide.ts planDecision), so its answers are cached and shared.
 */
import type { CompiledGlobalCap, CompiledLimit, CompiledOverride, CompiledPolicyBody, CompiledQuota, CompiledTenant, CompiledTier } from "./compiled";
import { ANY_OPERATION } from "./types";

/** What one request of one tenant is checked against, after its live overrides. */
export interface EffectiveLimits {
  tenant: CompiledTenant;
  tier: CompiledTier;
  operation: string;
  limits: CompiledLimit[];
  quotas: CompiledQuota[];
  globalCaps: CompiledGlobalCap[];
}

interface TierOperationIndex {
  limits: Map<string, CompiledLimit[]>;
  quotas: Map<string, CompiledQuota[]>;
  caps: Map<string, CompiledGlobalCap[]>;
  /** tenant\0operation → the answer with that tenant's overrides, valid for nowMs in [fromMs, untilMs). */
  tenants: Map<string, { result: EffectiveLimits; fromMs: number; untilMs: number }>;
}

const limitIndexes = new WeakMap<object, Map<string, TierOperationIndex>>();

const applies = (rowOperation: string, operation: string) => rowOperation === ANY_OPERATION || rowOperation === operation;

function tierIndex(doc: CompiledPolicyBody, tierName: string): TierOperationIndex | null {
  let perDoc = limitIndexes.get(doc);
  if (!perDoc) {
    perDoc = new Map();
    limitIndexes.set(doc, perDoc);
  }
  let index = perDoc.get(tierName);
  if (!index) {
    const tier = doc.tiers[tierName];
    if (!tier) return null;
    index = { limits: new Map(), quotas: new Map(), caps: new Map(), tenants: new Map() };
    perDoc.set(tierName, index);
  }
  return index;
}

/**
 * The limits, quotas and global caps a request of `tenantSlug` for `operationName` is checked
 * against at `nowMs`: the tier's rows for that operation (or `*`), with each live (unexpired)
 * override replacing the tier's rows for the same operation and scope (or period; every algorithm
 * of that cell: an override is one limit, inheriting its numbers from the first). Null for an
 * unknown tenant, or a tenant whose tier the document lacks. Results are cached per document (with
 * overrides: until the next expiry); callers must not mutate them.
 */
export function limitsFor(
  doc: CompiledPolicyBody,
  tenantSlug: string,
  operationName: string,
  nowMs: number,
): EffectiveLimits | null {
  const tenant = Object.hasOwn(doc.tenants, tenantSlug) ? doc.tenants[tenantSlug] : undefined;
  if (!tenant) return null;
  const tier = Object.hasOwn(doc.tiers, tenant.tier) ? doc.tiers[tenant.tier] : undefined;
  const index = tier ? tierIndex(doc, tier.name) : null;
  if (!tier || !index) return null;

  let limits = index.limits.get(operationName);
  if (!limits) {
    limits = tier.limits.filter((l) => applies(l.operation, operationName));
    index.limits.set(operationName, limits);
  }
  let quotas = index.quotas.get(operationName);
  if (!quotas) {
    quotas = tier.quotas.filter((q) => applies(q.operation, operationName));
    index.quotas.set(operationName, quotas);
  }
  let globalCaps = index.caps.get(operationName);
  if (!globalCaps) {
    globalCaps = doc.globalCaps.filter((g) => applies(g.operation, operationName));
    index.caps.set(operationName, globalCaps);
  }

  if (tenant.overrides.length === 0) return { tenant, tier, operation: operationName, limits, quotas, globalCaps };

  // With overrides, the answer changes only when one expires: cache it for [fromMs, untilMs).
  const cacheKey = `${tenant.slug}\u0000${operationName}`;
  const hit = index.tenants.get(cacheKey);
  if (hit && hit.fromMs <= nowMs && nowMs < hit.untilMs) return hit.result;
  let fromMs = -Infinity;
  let untilMs = Infinity;
  const liveLimits: Extract<CompiledOverride, { kind: "limit" }>[] = [];
  const liveQuotas: Extract<CompiledOverride, { kind: "quota" }>[] = [];
  for (const o of tenant.overrides) {
    if (!applies(o.operation, operationName)) continue;
    if (o.expiresAtMs !== null && o.expiresAtMs <= nowMs) {
      fromMs = Math.max(fromMs, o.expiresAtMs);
      continue;
    }
    if (o.expiresAtMs !== null) untilMs = Math.min(untilMs, o.expiresAtMs);
    if (o.kind === "limit") liveLimits.push(o);
    else liveQuotas.push(o);
  }
  if (liveLimits.length > 0) {
    limits = [
      ...limits.filter((l) => !liveLimits.some((o) => o.operation === l.operation && o.scope === l.scope)),
      ...liveLimits.map((o) => o.limit),
    ];
  }
  if (liveQuotas.length > 0) {
    quotas = [
      ...quotas.filter((q) => !liveQuotas.some((o) => o.operation === q.operation && o.period === q.period)),
      ...liveQuotas.map((o) => o.quota),
    ];
  }
  const result: EffectiveLimits = { tenant, tier, operation: operationName, limits, quotas, globalCaps };
  index.tenants.set(cacheKey, { result, fromMs, untilMs });
  return result;
}

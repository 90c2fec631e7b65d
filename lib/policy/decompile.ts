/**
 * A published document back in the policy file's shape: what "discard draft" and rollback write
 * into the draft so that it equals the live version again (docs/architecture.md, "Draft and live").
 * Pure: no I/O.
 *
 * The document is the compiled form, so several spellings compile to it (an operation's
 * `failureMode: open` under an `open` default, an override that inherits its window or names it).
 * `specFromDocument` takes the current draft as a hint and keeps the draft's own spelling of every
 * element that compiles to the document's element, so a reset changes only what really differs,
 * and the role check sees only those fields. Whatever it produces compiles to the document's body
 * (same checksum): the decompile test holds it to that.
 */
import { compileLimit, compileOverride, compileQuota, type PolicySpec, type TenantPolicySpec } from "./compile";
import type { CompiledLimit, CompiledOverride, CompiledPolicyBody, CompiledTier } from "./compiled";
import { canonicalJson } from "./checksum";
import { formatDurationMs, parseDurationMs } from "./duration";
import { rateLimitServiceSpec } from "./envoy/decompile";
import type { LimitSpec, OverrideSpec, QuotaSpec, TierSpec } from "./policy-file";
import { compileRequirements, formatPercent, type CompiledRequirements, type RequirementsSpec } from "./requirements";

const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);
const BUCKETS = new Set(["token_bucket", "leaky_bucket"]);

function limitSpec(l: CompiledLimit): LimitSpec {
  const spec: LimitSpec = { operation: l.operation, scope: l.scope, algorithm: l.algorithm, limit: l.limit, mode: l.mode };
  if (l.algorithm === "concurrency") spec.leaseTtl = formatDurationMs(l.leaseTtlMs);
  else spec.window = formatDurationMs(l.windowMs);
  if (BUCKETS.has(l.algorithm) && l.burst !== l.limit) spec.burst = l.burst;
  if (l.algorithm === "sliding_window_counter" && l.precision !== 1) spec.precision = l.precision;
  if (l.mode === "delay") spec.maxDelay = formatDurationMs(l.maxDelayMs);
  if (l.regions) spec.regions = l.regions;
  return spec;
}

function overrideSpec(o: CompiledOverride): OverrideSpec {
  const expiresAt = o.expiresAtMs === null ? undefined : new Date(o.expiresAtMs).toISOString();
  if (o.kind === "quota") {
    return { operation: o.operation, period: o.period, limit: o.quota.limit, overage: o.quota.overage, ...(expiresAt ? { expiresAt } : {}) };
  }
  const l = o.limit;
  return {
    operation: o.operation,
    scope: o.scope,
    limit: l.limit,
    algorithm: l.algorithm,
    ...(l.algorithm === "concurrency" ? {} : { window: formatDurationMs(l.windowMs) }),
    ...(BUCKETS.has(l.algorithm) ? { burst: l.burst } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  };
}

function requirementsSpec(r: CompiledRequirements): RequirementsSpec {
  const pct = (v: number | undefined) => (v === undefined ? undefined : formatPercent(v));
  const ms = (v: number | undefined) => (v === undefined ? undefined : formatDurationMs(v));
  const defined = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
  return {
    ...defined({ accuracy: pct(r.accuracy), boundaryBurst: r.boundaryBurst, rejectP95: ms(r.rejectP95Ms) }),
    operations: r.operations.map((o) =>
      defined({ operation: o.operation, accuracy: pct(o.accuracy), boundaryBurst: o.boundaryBurst, rejectP95: ms(o.rejectP95Ms), failureMode: o.failureMode }),
    ),
    limits: r.limits.map((l) =>
      defined({ tier: l.tier, operation: l.operation, scope: l.scope, algorithm: l.algorithm, accuracy: pct(l.accuracy), boundaryBurst: l.boundaryBurst }),
    ),
  };
}

/** The first element of `hints` that compiles to `target` (by `compile`), else `fallback`. */
function prefer<S, C>(hints: readonly S[] | undefined, compile: (s: S) => C | null, target: C, fallback: S): S {
  for (const hint of hints ?? []) {
    let compiled: C | null = null;
    try {
      compiled = compile(hint);
    } catch {
      compiled = null;
    }
    if (compiled !== null && same(compiled, target)) return structuredClone(hint);
  }
  return fallback;
}

function tierSpec(t: CompiledTier, hint: TierSpec | undefined): TierSpec {
  return {
    name: t.name,
    weight: t.weight,
    ...(t.thresholds ? { thresholds: [...t.thresholds] } : {}),
    limits: t.limits.map((l) => prefer(hint?.limits.filter((h) => h.operation === l.operation && h.scope === l.scope), (h) => compileLimit(t.name, h), l, limitSpec(l))),
    quotas: t.quotas.map((q) =>
      prefer<QuotaSpec, unknown>(
        hint?.quotas.filter((h) => h.operation === q.operation && h.period === q.period),
        (h) => compileQuota(t.name, h),
        q,
        { operation: q.operation, period: q.period, limit: q.limit, overage: q.overage },
      ),
    ),
  };
}

/**
 * The policy spec whose compilation is `doc`'s body, spelled like `hint` (the current draft)
 * wherever the draft's element compiles to the same thing.
 */
export function specFromDocument(doc: CompiledPolicyBody, hint?: PolicySpec): PolicySpec {
  const hintOps = new Map((hint?.operations ?? []).map((o) => [o.name, o]));
  const hintTiers = new Map((hint?.tiers ?? []).map((t) => [t.name, t]));
  const hintTenants = new Map((hint?.tenants ?? []).map((t) => [t.slug, t]));
  const defaultMode = doc.defaults.failureMode;

  const operations = Object.values(doc.operations).map((o) => {
    const h = hintOps.get(o.name);
    const failureMode = h && (h.failureMode ?? defaultMode) === o.failureMode ? h.failureMode : o.failureMode === defaultMode ? undefined : o.failureMode;
    return { name: o.name, match: [...o.match], cost: o.cost, ...(failureMode ? { failureMode } : {}) };
  });
  // Keep the draft's order of operations and tiers where it has them: the document's order is its
  // key order, which a document read back from PostgreSQL (jsonb) does not keep.
  const order = new Map((hint?.operations ?? []).map((o, i) => [o.name, i]));
  operations.sort((a, b) => (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity));

  const tierOrder = new Map((hint?.tiers ?? []).map((t, i) => [t.name, i]));
  const tiers = Object.values(doc.tiers)
    .map((t) => tierSpec(t, hintTiers.get(t.name)))
    .sort((a, b) => (tierOrder.get(a.name) ?? Infinity) - (tierOrder.get(b.name) ?? Infinity));

  const globalCaps = doc.globalCaps.map((g) => {
    const h = hint?.globalCaps.find(
      (c) => c.operation === g.operation && c.limit === g.limit && c.share === g.share && (c.regions ?? "local") === (g.regions ?? "local") && g.windowMs === parseDurationMs(c.window),
    );
    return h ? structuredClone(h) : { operation: g.operation, limit: g.limit, window: formatDurationMs(g.windowMs), share: g.share, ...(g.regions ? { regions: g.regions } : {}) };
  });

  const tenants: TenantPolicySpec[] = Object.values(doc.tenants).map((t) => {
    const h = hintTenants.get(t.slug);
    const tier = doc.tiers[t.tier];
    const overrides = t.overrides.map((o) =>
      prefer(
        h?.overrides.filter((x) => x.operation === o.operation),
        (x) => (tier ? compileOverride(tier, x, [], []) : null),
        o,
        overrideSpec(o),
      ),
    );
    return {
      slug: t.slug,
      name: t.name,
      tier: t.tier,
      status: t.status,
      ...(t.billing ? { billing: { ...t.billing } } : {}),
      ...(t.thresholds ? { thresholds: [...t.thresholds] } : {}),
      overrides,
    };
  });

  let requirements: RequirementsSpec | undefined;
  if (doc.requirements) {
    const draftReq = hint?.requirements;
    requirements = draftReq && same(compileRequirements(draftReq), doc.requirements) ? structuredClone(draftReq) : requirementsSpec(doc.requirements);
  }

  return {
    version: 1,
    defaults: { failureMode: defaultMode, ...(doc.defaults.planChange ? { planChange: doc.defaults.planChange } : {}) },
    operations,
    tiers,
    globalCaps,
    tenants,
    ...(requirements ? { requirements } : {}),
    ...(doc.rateLimitService ? { rateLimitService: rateLimitServiceSpec(doc.rateLimitService, hint?.rateLimitService) } : {}),
    ...(doc.approval ? { approval: { ...doc.approval } } : {}),
  };
}

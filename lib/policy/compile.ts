/**
 * The compiler: a validated policy (the file's shape, minus API keys) → the compiled document the
 * decision path evaluates (lib/policy/compiled.ts). Pure: no I/O, no clock, no environment.
 *
 * Ids are stable: a limit's id is a hash of tier|operation|scope|algorithm, a quota's of
 * tier|operation|period, a global cap's of operation|window. Editing a number keeps the id, so the
 * counters in Redis survive the edit; changing what is counted gives a new id and fresh counters.
 */
import { canonicalJson, sha256Hex } from "./checksum";
import {
  COMPILED_SCHEMA_VERSION,
  type CompiledGlobalCap,
  type CompiledLimit,
  type CompiledOperation,
  type CompiledOverride,
  type CompiledPolicy,
  type CompiledPolicyBody,
  type CompiledQuota,
  type CompiledTenant,
  type CompiledTier,
} from "./compiled";
import { parseDurationMs } from "./duration";
import { compileRateLimitService } from "./envoy/compile";
import { isEmptyRateLimitService } from "./envoy/schema";
import { compileRoutes } from "./match";
import {
  formatPath,
  parsePolicyFile,
  type LimitSpec,
  type OverrideSpec,
  type ParseResult,
  type PolicyFile,
  type PolicyIssue,
  type QuotaSpec,
  type TenantSpec,
} from "./policy-file";
import { compileRequirements } from "./requirements";
import { ANY_OPERATION, type RegionMode } from "./types";

/** A tenant as the compiler sees it: everything but its API keys (those never enter the document). */
export type TenantPolicySpec = Omit<TenantSpec, "keys">;

/** The policy file minus key plaintexts: what Postgres holds and what `compilePolicy` reads. */
export type PolicySpec = Omit<PolicyFile, "tenants"> & { tenants: TenantPolicySpec[] };

/** Lease lifetime of a concurrency limit that names none. */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/** Thrown by `compilePolicy` for a policy that does not validate; `issues` name their paths. */
export class PolicyCompileError extends Error {
  readonly issues: PolicyIssue[];
  constructor(issues: PolicyIssue[]) {
    super(issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; "));
    this.name = "PolicyCompileError";
    this.issues = issues;
  }
}

/** 16 hex chars of sha256: short enough for Redis keys, 64 bits against collisions. */
export function stableId(...parts: (string | number)[]): string {
  return sha256Hex(parts.join("|")).slice(0, 16);
}

export const limitId = (tier: string, operation: string, scope: string, algorithm: string) =>
  stableId("limit", tier, operation, scope, algorithm);
export const quotaId = (tier: string, operation: string, period: string) => stableId("quota", tier, operation, period);
export const globalCapId = (operation: string, windowMs: number) => stableId("cap", operation, windowMs);

const ms = (d: string | undefined): number => (d === undefined ? 0 : (parseDurationMs(d) ?? 0));

function limitName(tier: string, operation: string, scope: string): string {
  return operation === ANY_OPERATION ? `${tier}-${scope}` : `${tier}-${operation}-${scope}`;
}

export function compileLimit(tier: string, l: LimitSpec): CompiledLimit {
  return {
    id: limitId(tier, l.operation, l.scope, l.algorithm),
    name: limitName(tier, l.operation, l.scope),
    operation: l.operation,
    scope: l.scope,
    algorithm: l.algorithm,
    limit: l.limit,
    windowMs: l.algorithm === "concurrency" ? 0 : ms(l.window),
    burst: l.burst ?? l.limit,
    precision: l.precision ?? 1,
    mode: l.mode,
    maxDelayMs: ms(l.maxDelay),
    leaseTtlMs: l.algorithm === "concurrency" ? (l.leaseTtl ? ms(l.leaseTtl) : DEFAULT_LEASE_TTL_MS) : 0,
    ...regionsOf(l.regions),
  };
}

/** `regions` as the compiled document carries it: absent for `local` (docs/regions.md). */
export function regionsOf(regions: RegionMode | undefined): { regions?: Exclude<RegionMode, "local"> } {
  return regions === undefined || regions === "local" ? {} : { regions };
}

export function compileQuota(tier: string, q: QuotaSpec): CompiledQuota {
  return { id: quotaId(tier, q.operation, q.period), operation: q.operation, period: q.period, limit: q.limit, overage: q.overage };
}

/**
 * An override replaces the tier's limit for (operation, scope), or quota for (operation, period).
 * Fields it omits are inherited from the limit it replaces; with nothing to inherit from it must
 * name its window (and defaults to sliding_window_counter).
 */
export function compileOverride(
  tier: CompiledTier,
  o: OverrideSpec,
  path: (string | number)[],
  issues: PolicyIssue[],
): CompiledOverride | null {
  const expiresAtMs = o.expiresAt === undefined ? null : Date.parse(o.expiresAt);
  if (o.period !== undefined) {
    const base = tier.quotas.find((q) => q.operation === o.operation && q.period === o.period);
    const quota: CompiledQuota = {
      id: quotaId(tier.name, o.operation, o.period),
      operation: o.operation,
      period: o.period,
      limit: o.limit,
      overage: o.overage ?? base?.overage ?? "block",
    };
    return { kind: "quota", operation: o.operation, period: o.period, quota, expiresAtMs };
  }
  const scope = o.scope!;
  const base = tier.limits.find(
    (l) => l.operation === o.operation && l.scope === scope && (o.algorithm === undefined || l.algorithm === o.algorithm),
  );
  const algorithm = o.algorithm ?? base?.algorithm ?? "sliding_window_counter";
  const inherited = base && base.algorithm === algorithm ? base : undefined;
  const windowMs = algorithm === "concurrency" ? 0 : o.window !== undefined ? ms(o.window) : (inherited?.windowMs ?? 0);
  if (algorithm !== "concurrency" && windowMs === 0) {
    issues.push({
      path: formatPath([...path, "window"]),
      message: `required: tier ${tier.name} has no ${algorithm} limit for operation ${o.operation}, scope ${scope} to inherit it from`,
    });
    return null;
  }
  if (o.overage !== undefined) {
    issues.push({ path: formatPath([...path, "overage"]), message: "not allowed on a limit override (only with period)" });
    return null;
  }
  const limit = Number(o.limit);
  const compiled: CompiledLimit = {
    id: limitId(tier.name, o.operation, scope, algorithm),
    name: limitName(tier.name, o.operation, scope),
    operation: o.operation,
    scope,
    algorithm,
    limit,
    windowMs,
    burst: o.burst ?? (inherited && inherited.burst !== inherited.limit ? inherited.burst : limit),
    precision: inherited?.precision ?? 1,
    mode: inherited?.mode ?? "reject",
    maxDelayMs: inherited?.maxDelayMs ?? 0,
    leaseTtlMs: algorithm === "concurrency" ? (inherited?.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS) : 0,
    // A tenant's override replaces the number, not how the limit is enforced across regions.
    ...regionsOf(base?.regions),
  };
  return { kind: "limit", operation: o.operation, scope, limit: compiled, expiresAtMs };
}

/** Validates a spec with the policy file's own rules (so errors carry the file's paths). */
export function checkPolicySpec(spec: PolicySpec): ParseResult<PolicyFile> {
  return parsePolicyFile({ ...spec, tenants: spec.tenants.map((t) => ({ ...t, keys: [] })) });
}

/** Compiles a policy; throws PolicyCompileError (with paths) when it does not validate. */
export function compilePolicy(input: PolicySpec): CompiledPolicyBody {
  const parsed = checkPolicySpec(input);
  if (!parsed.ok) throw new PolicyCompileError(parsed.issues);
  return compileParsed(parsed.value);
}

/**
 * The one validation of a draft, shared by every edit (file apply, UI edits, CLI): the policy file's
 * rules, then the compiler's (an override with nothing to inherit its window from, …), so the draft
 * always compiles and publish can only fail for reasons outside the policy. Returns the spec with
 * the file's defaults filled in, or every issue with its path.
 */
export function validatePolicySpec(input: PolicySpec): ParseResult<PolicySpec> {
  const parsed = checkPolicySpec(input);
  if (!parsed.ok) return parsed;
  try {
    compileParsed(parsed.value);
  } catch (error) {
    if (error instanceof PolicyCompileError) return { ok: false, issues: error.issues };
    throw error;
  }
  return { ok: true, value: { ...parsed.value, tenants: parsed.value.tenants.map(({ keys: _keys, ...t }) => t) } };
}

function compileParsed(spec: PolicyFile): CompiledPolicyBody {
  const issues: PolicyIssue[] = [];

  const operations: Record<string, CompiledOperation> = {};
  for (const op of spec.operations) {
    operations[op.name] = {
      name: op.name,
      cost: op.cost,
      failureMode: op.failureMode ?? spec.defaults.failureMode,
      match: [...op.match],
    };
  }

  const tiers: Record<string, CompiledTier> = {};
  for (const tier of spec.tiers) {
    tiers[tier.name] = {
      name: tier.name,
      weight: tier.weight,
      limits: tier.limits.map((l) => compileLimit(tier.name, l)),
      quotas: tier.quotas.map((q) => compileQuota(tier.name, q)),
      // Optional fields appear only when set, so documents without them keep their checksums.
      ...(tier.thresholds ? { thresholds: [...tier.thresholds] } : {}),
    };
  }

  const globalCaps: CompiledGlobalCap[] = spec.globalCaps.map((g) => {
    const windowMs = ms(g.window);
    return { id: globalCapId(g.operation, windowMs), operation: g.operation, limit: g.limit, windowMs, share: g.share, ...regionsOf(g.regions) };
  });

  const tenants: Record<string, CompiledTenant> = {};
  spec.tenants.forEach((t, ti) => {
    const tier = tiers[t.tier];
    const overrides: CompiledOverride[] = [];
    t.overrides.forEach((o, oi) => {
      const compiled = compileOverride(tier, o, ["tenants", ti, "overrides", oi], issues);
      if (compiled) overrides.push(compiled);
    });
    tenants[t.slug] = {
      slug: t.slug,
      name: t.name,
      tier: t.tier,
      status: t.status,
      overrides,
      ...(t.billing ? { billing: { anchor: t.billing.anchor, timeZone: t.billing.timeZone } } : {}),
      ...(t.thresholds ? { thresholds: [...t.thresholds] } : {}),
    };
  });
  if (issues.length > 0) {
    throw new PolicyCompileError(issues);
  }

  return {
    schemaVersion: COMPILED_SCHEMA_VERSION,
    defaults: { failureMode: spec.defaults.failureMode, ...(spec.defaults.planChange ? { planChange: spec.defaults.planChange } : {}) },
    operations,
    routes: compileRoutes(spec.operations),
    tiers,
    globalCaps,
    tenants,
    ...(spec.requirements ? { requirements: compileRequirements(spec.requirements) } : {}),
    ...(spec.rateLimitService && !isEmptyRateLimitService(spec.rateLimitService) ? { rateLimitService: compileRateLimitService(spec.rateLimitService) } : {}),
    ...(spec.approval ? { approval: { ...spec.approval } } : {}),
  };
}

/** sha256 of the canonical JSON of a body: equal bodies, equal checksums, whatever the key order. */
export function policyChecksum(body: CompiledPolicyBody): string {
  return sha256Hex(canonicalJson(bodyOf(body)));
}

/**
 * The body of a document (drops version, checksum, createdAt). `requirements`,
 * `rateLimitService` and `approval` are there only when the policy has them, so documents without
 * them keep the checksums they always had.
 */
export function bodyOf(doc: CompiledPolicyBody): CompiledPolicyBody {
  return {
    schemaVersion: doc.schemaVersion,
    defaults: doc.defaults,
    operations: doc.operations,
    routes: doc.routes,
    tiers: doc.tiers,
    globalCaps: doc.globalCaps,
    tenants: doc.tenants,
    ...(doc.requirements ? { requirements: doc.requirements } : {}),
    ...(doc.rateLimitService ? { rateLimitService: doc.rateLimitService } : {}),
    ...(doc.approval ? { approval: doc.approval } : {}),
  };
}

/** Stamps a body with its version, checksum and creation time. */
export function finalizePolicy(body: CompiledPolicyBody, version: number, createdAt: Date | string): CompiledPolicy {
  const clean = bodyOf(body);
  return {
    ...clean,
    version,
    checksum: policyChecksum(clean),
    createdAt: typeof createdAt === "string" ? createdAt : createdAt.toISOString(),
  };
}

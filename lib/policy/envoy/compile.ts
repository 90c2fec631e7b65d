/**
 * The `rateLimitService` section (validated) → its compiled form (lib/policy/envoy/compiled.ts).
 * Pure. A rule's id hashes its domain, its path of composite keys (`message_type_marketing`,
 * `to_number`) and how it counts — not its numbers — so raising a limit keeps its counters, and
 * counting differently (another algorithm, a period) starts fresh, as Sluice's own limit ids do.
 */
import { sha256Hex } from "../checksum";
import { parseDurationMs } from "../duration";
import type { CompiledEnvoyDescriptor, CompiledEnvoyRule, CompiledEnvoyService, EnvoyCounting } from "./compiled";
import { compositeKey, type EnvoyDescriptorSpec, type EnvoyRateLimitSpec, type RateLimitServiceSpec } from "./schema";
import { parseEnvoyUnit, UNIT_SECONDS, UNKNOWN_UNIT, unitOfWindowMs, type ReportedUnit } from "./units";

/** 16 hex chars of sha256 of the JSON of its parts (JSON, so no two part lists collide). */
export function envoyRuleId(domain: string, path: readonly string[], counting: EnvoyCounting | "unlimited"): string {
  return sha256Hex(JSON.stringify(["envoy", domain, path, counting])).slice(0, 16);
}

/** The id under which a descriptor's own `limit` override counts (their cache key: domain and entries). */
export function envoyOverrideId(domain: string): string {
  return sha256Hex(JSON.stringify(["envoy-override", domain])).slice(0, 16);
}

function compileRule(domain: string, path: readonly string[], r: EnvoyRateLimitSpec): CompiledEnvoyRule {
  const name = r.name ?? "";
  const replaces = (r.replaces ?? []).map((e) => e.name);
  if (r.unlimited) {
    return {
      id: envoyRuleId(domain, path, "unlimited"),
      name,
      replaces,
      unlimited: true,
      requestsPerUnit: 0,
      unit: UNKNOWN_UNIT,
      counting: "envoy",
      windowMs: 0,
      period: null,
      burst: 0,
      precision: 1,
      failureMode: null,
    };
  }
  const counting: EnvoyCounting = r.period ? "quota" : (r.algorithm ?? "envoy");
  const unitOfFile = r.unit === undefined ? null : parseEnvoyUnit(r.unit);
  const windowMs = r.period ? 0 : r.window !== undefined ? (parseDurationMs(r.window) ?? 0) : UNIT_SECONDS[unitOfFile ?? "SECOND"] * 1000;
  const unit: ReportedUnit = r.period ? (r.period === "day" ? "DAY" : "MONTH") : (unitOfFile ?? unitOfWindowMs(windowMs));
  const requestsPerUnit = r.requests_per_unit ?? 0;
  return {
    id: envoyRuleId(domain, path, counting),
    name,
    replaces,
    unlimited: false,
    requestsPerUnit,
    unit,
    counting,
    windowMs,
    period: r.period ?? null,
    burst: r.burst ?? requestsPerUnit,
    precision: r.precision ?? 1,
    failureMode: r.failureMode ?? null,
  };
}

function compileDescriptor(domain: string, parentPath: readonly string[], d: EnvoyDescriptorSpec): CompiledEnvoyDescriptor {
  const path = [...parentPath, compositeKey(d.key, d.value)];
  return {
    key: d.key,
    value: d.value ?? "",
    rule: d.rate_limit ? compileRule(domain, path, d.rate_limit) : null,
    shadowMode: d.shadow_mode ?? false,
    quotaMode: d.quota_mode ?? false,
    detailedMetric: d.detailed_metric ?? false,
    valueToMetric: d.value_to_metric ?? false,
    shareThreshold: d.share_threshold ?? false,
    metadata: d.metadata ?? null,
    descriptors: (d.descriptors ?? []).map((child) => compileDescriptor(domain, path, child)),
  };
}

export function compileRateLimitService(s: RateLimitServiceSpec): CompiledEnvoyService {
  return {
    unknownDomain: s.unknownDomain,
    shadowMode: s.shadowMode,
    domains: s.domains.map((d) => ({ domain: d.domain, descriptors: (d.descriptors ?? []).map((x) => compileDescriptor(d.domain, [], x)) })),
  };
}

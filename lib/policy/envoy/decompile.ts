/**
 * A published `rateLimitService` back in the policy file's shape (rollback and "discard draft"
 * reset the draft with it; lib/policy/decompile.ts). Several spellings compile alike (`unit:
 * Second` and `unit: second`, `shadow_mode: false` and none, `window: 60s` and `unit: minute`),
 * so a domain the draft spells in a way that compiles to the document's domain keeps the draft's
 * spelling; any other is written in the canonical spelling. Either compiles to the same document.
 */
import { canonicalJson } from "../checksum";
import { formatDurationMs } from "../duration";
import { compileRateLimitService } from "./compile";
import type { CompiledEnvoyDescriptor, CompiledEnvoyDomain, CompiledEnvoyRule, CompiledEnvoyService } from "./compiled";
import type { EnvoyDescriptorSpec, EnvoyDomainSpec, EnvoyRateLimitSpec, RateLimitServiceSpec } from "./schema";
import { UNIT_SECONDS, UNKNOWN_UNIT } from "./units";

function ruleSpec(r: CompiledEnvoyRule): EnvoyRateLimitSpec {
  const spec: EnvoyRateLimitSpec = {};
  if (r.name) spec.name = r.name;
  if (r.replaces.length > 0) spec.replaces = r.replaces.map((name) => ({ name }));
  if (r.unlimited) return { ...spec, unlimited: true };
  if (r.period) spec.period = r.period;
  else if (r.unit !== UNKNOWN_UNIT && UNIT_SECONDS[r.unit] * 1000 === r.windowMs) spec.unit = r.unit.toLowerCase();
  else spec.window = formatDurationMs(r.windowMs);
  spec.requests_per_unit = r.requestsPerUnit;
  if (r.counting !== "envoy" && r.counting !== "quota") spec.algorithm = r.counting;
  if ((r.counting === "token_bucket" || r.counting === "leaky_bucket") && r.burst !== r.requestsPerUnit) spec.burst = r.burst;
  if (r.counting === "sliding_window_counter" && r.precision !== 1) spec.precision = r.precision;
  if (r.failureMode) spec.failureMode = r.failureMode;
  return spec;
}

function descriptorSpec(d: CompiledEnvoyDescriptor): EnvoyDescriptorSpec {
  const spec: EnvoyDescriptorSpec = { key: d.key };
  if (d.value) spec.value = d.value;
  if (d.rule) spec.rate_limit = ruleSpec(d.rule);
  if (d.shadowMode) spec.shadow_mode = true;
  if (d.quotaMode) spec.quota_mode = true;
  if (d.detailedMetric) spec.detailed_metric = true;
  if (d.valueToMetric) spec.value_to_metric = true;
  if (d.shareThreshold) spec.share_threshold = true;
  if (d.metadata) spec.metadata = structuredClone(d.metadata);
  if (d.descriptors.length > 0) spec.descriptors = d.descriptors.map(descriptorSpec);
  return spec;
}

/** The canonical spelling of one compiled domain. */
export function domainSpec(d: CompiledEnvoyDomain): EnvoyDomainSpec {
  return d.descriptors.length > 0 ? { domain: d.domain, descriptors: d.descriptors.map(descriptorSpec) } : { domain: d.domain };
}

/** The section whose compilation is `compiled`, spelled like `hint` (the draft's section) where that compiles the same. */
export function rateLimitServiceSpec(compiled: CompiledEnvoyService, hint?: RateLimitServiceSpec): RateLimitServiceSpec {
  const hinted = new Map((hint?.domains ?? []).map((d) => [d.domain, d]));
  const domains = compiled.domains.map((d) => {
    const h = hinted.get(d.domain);
    if (h) {
      const again = compileRateLimitService({ unknownDomain: "ok", shadowMode: false, domains: [h] }).domains[0];
      if (canonicalJson(again) === canonicalJson(d)) return structuredClone(h);
    }
    return domainSpec(d);
  });
  return { unknownDomain: compiled.unknownDomain, shadowMode: compiled.shadowMode, domains };
}

/**
 * `ShouldRateLimit` for a domain of the policy's `rateLimitService`, as envoyproxy/ratelimit
 * answers it (src/service/ratelimit.go, src/limiter/base_limiter.go), in two pure steps around
 * the counters, so that every backend (the memory model here, Redis on the decision path) shares
 * the semantics and only does the counting:
 *
 * 1. `planEnvoyRequest`: per descriptor, the rule that applies (lib/policy/envoy/match.ts) or its
 *    own `limit` override; `unlimited` rules are never counted; a rule whose `name` another
 *    applying rule `replaces` is dropped; the cost is the descriptor's `hits_addend` when it has
 *    one (0 means look without counting), else the request's, at least 1; the counter's key parts.
 * 2. `envoyResponse`: the statuses from the counted values (`current_limit`, `limit_remaining`,
 *    `duration_until_reset`; `shadow_mode` answers OK while counting) and `overall_code`:
 *    OVER_LIMIT iff a descriptor not in quota mode is over, or every quota-mode descriptor is;
 *    the section's `shadowMode` turns an OVER_LIMIT overall into OK.
 *
 * Their fixed window (counting `envoy`) is INCRBY of the cost on every planned descriptor, even
 * when another is already over, then `count > requests_per_unit` is over. Sluice's algorithms
 * (the additions) decide each descriptor on its own with the algorithm's outcome.
 */
import type { LimitOutcome } from "../algorithms/types";
import type { CompiledEnvoyRule, CompiledEnvoyService } from "./compiled";
import { envoyOverrideId } from "./compile";
import { envoyDomainIndex, matchEnvoyDescriptor, overrideMetricKey, type EnvoyEntry } from "./match";
import { parseEnvoyUnit, UNIT_SECONDS, type ReportedUnit } from "./units";

export const UINT32_MAX = 4_294_967_295;
/** Descriptors one call may carry (theirs has no bound; Sluice's own domain has the same one): one script call counts them all. */
export const MAX_ENVOY_DESCRIPTORS = 100;
/** The rule label of a descriptor's own `limit` (Envoy's limit override): one for all, its values being the request's. */
export const ENVOY_OVERRIDE_LABEL = "_override";

/** A RateLimitRequest as the gRPC handler decodes it (snake_case; lib/rls/protos.ts RlsRequestMessage has this shape). */
export interface EnvoyRequestDescriptor {
  entries?: EnvoyEntry[];
  limit?: { requests_per_unit?: number; unit?: string } | null;
  hits_addend?: { value?: number } | null;
}

export interface EnvoyRequest {
  domain?: string;
  descriptors?: EnvoyRequestDescriptor[];
  hits_addend?: number;
}

/** What a counter is keyed by: the rule and the values it counts apart (lib/policy/counter-keys.ts `envoy`). */
export interface EnvoyCounterParts {
  ruleId: string;
  /** The entries' values (a shared wildcard's pattern in place of the value); an override's keys and values. */
  subject: string[];
}

export type EnvoyDescriptorPlan =
  | { kind: "none" }
  | { kind: "unlimited"; rule: CompiledEnvoyRule; metricKey: string; label: string }
  | { kind: "replaced"; rule: CompiledEnvoyRule; metricKey: string; label: string }
  | {
      kind: "limit";
      rule: CompiledEnvoyRule;
      /** What usage and /metrics call the rule: its `name`, else its configured path (ENVOY_OVERRIDE_LABEL for a descriptor's own limit); bounded by the config. */
      label: string;
      /** Units to count (0: look only). */
      hits: number;
      counter: EnvoyCounterParts;
      metricKey: string;
      shadowMode: boolean;
      quotaMode: boolean;
      /** The rule's `metadata`, for responses that carry it (their RESPONSE_DYNAMIC_METADATA). */
      metadata: Record<string, unknown> | null;
    };

export type EnvoyLimitPlan = Extract<EnvoyDescriptorPlan, { kind: "limit" }>;

export interface EnvoyPlan {
  domain: string;
  /** False for a domain the section lacks: every descriptor is `none` (theirs counts it as not found). */
  known: boolean;
  /** The section's `shadowMode`. */
  shadowMode: boolean;
  descriptors: EnvoyDescriptorPlan[];
}

export interface EnvoyRequestError {
  /** The request field, as a protobuf JSON path reads: `descriptors[1].limit.unit`. */
  field: string;
  message: string;
  /** `unknown_domain` when the section's `unknownDomain: error` refuses the domain. */
  reason: "invalid_request" | "unknown_domain";
}

export type EnvoyPlanResult = { ok: true; plan: EnvoyPlan } | { ok: false; error: EnvoyRequestError };

const invalid = (field: string, message: string): EnvoyPlanResult => ({ ok: false, error: { field, message: `${field}: ${message}`, reason: "invalid_request" } });
const isCount = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 0 && n <= UINT32_MAX;

/** A descriptor's own `limit` as the rule it stands for: theirs counts it by domain and entries, never shadowed or replaced. */
function overrideRule(domain: string, requestsPerUnit: number, unit: keyof typeof UNIT_SECONDS): CompiledEnvoyRule {
  return {
    id: envoyOverrideId(domain),
    name: "",
    replaces: [],
    unlimited: false,
    requestsPerUnit,
    unit,
    counting: "envoy",
    windowMs: UNIT_SECONDS[unit] * 1000,
    period: null,
    burst: requestsPerUnit,
    precision: 1,
    failureMode: null,
  };
}

export function planEnvoyRequest(service: CompiledEnvoyService | undefined, request: EnvoyRequest): EnvoyPlanResult {
  const domain = request.domain ?? "";
  if (domain === "") return invalid("domain", "rate limit domain must not be empty");
  const descriptors = request.descriptors ?? [];
  if (descriptors.length === 0) return invalid("descriptors", "rate limit descriptor list must not be empty");
  if (descriptors.length > MAX_ENVOY_DESCRIPTORS) return invalid("descriptors", `at most ${MAX_ENVOY_DESCRIPTORS} descriptors`);
  const requestHits = request.hits_addend ?? 0;
  if (!isCount(requestHits)) return invalid("hits_addend", `expected an integer from 0 to ${UINT32_MAX}`);

  const root = service ? envoyDomainIndex(service, domain) : null;
  if (!root) {
    if (service?.unknownDomain === "error") return { ok: false, error: { field: "domain", message: `domain: unknown domain ${JSON.stringify(domain)}`, reason: "unknown_domain" } };
    return { ok: true, plan: { domain, known: false, shadowMode: service?.shadowMode ?? false, descriptors: descriptors.map(() => ({ kind: "none" })) } };
  }

  const planned: EnvoyDescriptorPlan[] = [];
  const replacing = new Set<string>();
  for (let i = 0; i < descriptors.length; i++) {
    const d = descriptors[i]!;
    const entries = d.entries ?? [];
    const own = d.hits_addend?.value;
    if (d.hits_addend && own !== undefined && !isCount(own)) return invalid(`descriptors[${i}].hits_addend`, `expected an integer from 0 to ${UINT32_MAX}`);
    const hits = d.hits_addend ? (own ?? 0) : Math.max(1, requestHits);

    if (d.limit) {
      const unit = parseEnvoyUnit(d.limit.unit ?? "");
      if (!unit) return invalid(`descriptors[${i}].limit.unit`, `expected one of ${Object.keys(UNIT_SECONDS).join(", ")}, got ${JSON.stringify(d.limit.unit ?? "")}`);
      const perUnit = d.limit.requests_per_unit ?? 0;
      if (!isCount(perUnit)) return invalid(`descriptors[${i}].limit.requests_per_unit`, `expected an integer from 0 to ${UINT32_MAX}`);
      const subject = entries.flatMap((e) => [e.key ?? "", e.value ?? ""]);
      const rule = overrideRule(domain, perUnit, unit);
      planned.push({ kind: "limit", rule, label: ENVOY_OVERRIDE_LABEL, hits, counter: { ruleId: rule.id, subject }, metricKey: overrideMetricKey(domain, entries), shadowMode: false, quotaMode: false, metadata: null });
      continue;
    }

    const match = matchEnvoyDescriptor(root, domain, entries);
    if (!match) {
      planned.push({ kind: "none" });
      continue;
    }
    for (const name of match.rule.replaces) replacing.add(name);
    const label = match.rule.name || match.configPath;
    if (match.rule.unlimited) {
      planned.push({ kind: "unlimited", rule: match.rule, metricKey: match.metricKey, label });
      continue;
    }
    const subject = entries.map((e, j) => match.shared?.[j] ?? e.value ?? "");
    planned.push({
      kind: "limit",
      rule: match.rule,
      label,
      hits,
      counter: { ruleId: match.rule.id, subject },
      metricKey: match.metricKey,
      shadowMode: match.descriptor.shadowMode,
      quotaMode: match.descriptor.quotaMode,
      metadata: match.descriptor.metadata,
    });
  }
  // Replaces applies across the request's descriptors, once every rule is known (theirs does the same).
  const descriptorsPlanned = planned.map((p): EnvoyDescriptorPlan =>
    p.kind === "limit" && p.rule.name !== "" && replacing.has(p.rule.name) ? { kind: "replaced", rule: p.rule, metricKey: p.metricKey, label: p.label } : p,
  );
  return { ok: true, plan: { domain, known: true, shadowMode: service?.shadowMode ?? false, descriptors: descriptorsPlanned } };
}

// ---- Counting results → the response

/** What the backend counted for one `limit` descriptor. */
export type EnvoyCount =
  /** Their fixed window: the counter after INCRBY of the hits. */
  | { counting: "envoy"; after: number }
  /** A Sluice algorithm's outcome for the hits (evaluated in reject mode; shadow is applied here). */
  | { counting: "sluice"; outcome: LimitOutcome }
  /** Nothing counted: the store did not answer in time and the rule's failure mode answers (open: OK; closed: OVER_LIMIT). */
  | { counting: "unavailable"; failureMode: "open" | "closed" };

export type EnvoyCode = "OK" | "OVER_LIMIT";

export interface EnvoyStatus {
  code: EnvoyCode;
  current_limit?: { name: string; requests_per_unit: number; unit: ReportedUnit };
  limit_remaining: number;
  duration_until_reset?: { seconds: number };
}

export interface EnvoyResponse {
  overall_code: EnvoyCode;
  statuses: EnvoyStatus[];
}

/** The window of an `envoy`-counted rule at `nowMs`: `[⌊now / window⌋ · window, +window)`. */
export function envoyWindow(rule: CompiledEnvoyRule, nowMs: number): { startMs: number; endMs: number } {
  const startMs = Math.floor(nowMs / rule.windowMs) * rule.windowMs;
  return { startMs, endMs: startMs + rule.windowMs };
}

const clampCount = (n: number) => Math.max(0, Math.min(UINT32_MAX, Math.floor(n)));

/** Whether the rule is over its limit after this count (before shadow mode turns the answer OK). */
function isOver(p: EnvoyLimitPlan, count: EnvoyCount): boolean {
  if (count.counting === "envoy") return count.after > p.rule.requestsPerUnit;
  if (count.counting === "unavailable") return count.failureMode === "closed";
  return !count.outcome.allowed;
}

function limitStatus(p: EnvoyLimitPlan, count: EnvoyCount, nowMs: number): EnvoyStatus {
  const rule = p.rule;
  const over = isOver(p, count);
  const code: EnvoyCode = over && !p.shadowMode ? "OVER_LIMIT" : "OK";
  const currentLimit = { name: rule.name, requests_per_unit: rule.requestsPerUnit, unit: rule.unit };
  // Nothing was counted: nothing to say of what remains or when it resets.
  if (count.counting === "unavailable") return { code, current_limit: currentLimit, limit_remaining: 0 };
  let remaining: number;
  let resetSeconds: number;
  if (count.counting === "envoy") {
    remaining = over ? 0 : rule.requestsPerUnit - count.after;
    // Whole seconds, as theirs: the window's end minus the current Unix second (1 … window).
    resetSeconds = envoyWindow(rule, nowMs).endMs / 1000 - Math.floor(nowMs / 1000);
  } else {
    remaining = over ? 0 : clampCount(count.outcome.remaining);
    resetSeconds = Math.max(0, Math.ceil((count.outcome.resetAtMs - nowMs) / 1000));
  }
  return {
    code,
    current_limit: currentLimit,
    limit_remaining: remaining,
    duration_until_reset: { seconds: resetSeconds },
  };
}

/**
 * The response to a planned request, given what was counted for each `limit` descriptor
 * (`counts[i]`; null for the others).
 */
export function envoyResponse(plan: EnvoyPlan, counts: readonly (EnvoyCount | null)[], nowMs: number): EnvoyResponse {
  let failedRate = 0;
  let failedQuota = 0;
  let quotaDescriptors = 0;
  const statuses = plan.descriptors.map((p, i): EnvoyStatus => {
    if (p.kind === "unlimited") return { code: "OK", limit_remaining: UINT32_MAX };
    if (p.kind !== "limit") return { code: "OK", limit_remaining: 0 };
    const count = counts[i];
    if (!count) throw new Error(`envoyResponse: descriptor ${i} was planned for counting but has no count`);
    const status = limitStatus(p, count, nowMs);
    if (p.quotaMode) quotaDescriptors++;
    if (status.code === "OVER_LIMIT") {
      if (p.quotaMode) failedQuota++;
      else failedRate++;
    }
    return status;
  });
  const over = failedRate > 0 || (quotaDescriptors > 0 && failedQuota === quotaDescriptors);
  return { overall_code: over && !plan.shadowMode ? "OVER_LIMIT" : "OK", statuses };
}

/**
 * What each descriptor came to, for usage and metrics (a domain and the rule's metric key stand
 * where tenant and limit stand): `shadow_denied` is over the limit in shadow mode, answered OK;
 * `degraded` passed without the store (failure mode open), `unavailable` refused without it (closed).
 */
export type EnvoyOutcome = "no_rule" | "unlimited" | "replaced" | "allowed" | "denied" | "shadow_denied" | "degraded" | "unavailable";

export function envoyOutcomes(plan: EnvoyPlan, counts: readonly (EnvoyCount | null)[]): EnvoyOutcome[] {
  return plan.descriptors.map((p, i) => {
    if (p.kind === "none") return "no_rule";
    if (p.kind !== "limit") return p.kind;
    const count = counts[i];
    if (count?.counting === "unavailable") return count.failureMode === "open" ? "degraded" : p.shadowMode ? "degraded" : "unavailable";
    if (!count || !isOver(p, count)) return "allowed";
    return p.shadowMode ? "shadow_denied" : "denied";
  });
}

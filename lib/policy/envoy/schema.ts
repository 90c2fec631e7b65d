/**
 * The policy file's `rateLimitService` section (docs/envoy-ratelimit.md): Envoy rate limit service
 * domains, each an envoyproxy/ratelimit config document field for field (snake_case, as their
 * README defines it, so their YAML loads unchanged), plus Sluice's additions on a `rate_limit`
 * (camelCase, every one optional and off by default, so an imported config answers as theirs).
 *
 * As strict as their loader (src/config/config_impl.go), with each of its refusals reported as a
 * policy issue at its path: an empty domain or key, a duplicate domain, a duplicate descriptor at
 * one level (by their composite key `key` or `key_value`), an unknown unit, `unlimited` with a
 * unit, an empty `replaces` entry or one naming its own rule, `share_threshold` without a `*`,
 * unknown fields. Stricter than theirs where theirs guesses: a missing `requests_per_unit` (they
 * read 0, which blocks everything) must be written.
 */
import { z } from "zod";
import { parseDurationMs } from "../duration";
import { FAILURE_MODES, PERIODS } from "../types";
import { ENVOY_UNITS, parseEnvoyUnit } from "./units";

const UINT32_MAX = 4_294_967_295;

/** Sluice's algorithms an Envoy rule may count with; concurrency needs a release RLS has no call for. */
export const ENVOY_RULE_ALGORITHMS = ["fixed_window", "sliding_window_log", "sliding_window_counter", "token_bucket", "leaky_bucket"] as const;
export type EnvoyRuleAlgorithm = (typeof ENVOY_RULE_ALGORITHMS)[number];

export const UNKNOWN_DOMAIN_ANSWERS = ["ok", "error"] as const;

const UNITS_TEXT = ENVOY_UNITS.map((u) => u.toLowerCase()).join(", ");

/** A Sluice window: a duration of whole seconds (Envoy's answers count in seconds). */
const windowSchema = z.string().superRefine((value, ctx) => {
  const ms = parseDurationMs(value);
  if (ms === null || ms % 1000 !== 0) ctx.addIssue({ code: "custom", message: `expected a duration of whole seconds like 90s or 15m, got ${JSON.stringify(value)}` });
});

const uint32 = z.number().int("expected an integer").min(0, "expected an integer ≥ 0").max(UINT32_MAX, `expected an integer ≤ ${UINT32_MAX}`);

export interface EnvoyRateLimitSpec {
  name?: string;
  replaces?: { name: string }[];
  unit?: string;
  requests_per_unit?: number;
  unlimited?: boolean;
  /** Sluice: count with one of its algorithms instead of their fixed window. */
  algorithm?: EnvoyRuleAlgorithm;
  /** Sluice: any window (`90s`, `15m`) instead of one unit. */
  window?: string;
  /** Sluice: a quota per UTC calendar day or month instead of a window. */
  period?: (typeof PERIODS)[number];
  burst?: number;
  precision?: number;
  /** Sluice: what this rule answers when Redis cannot (default: the policy's `defaults.failureMode`). */
  failureMode?: (typeof FAILURE_MODES)[number];
}

export interface EnvoyDescriptorSpec {
  key: string;
  value?: string;
  rate_limit?: EnvoyRateLimitSpec;
  shadow_mode?: boolean;
  quota_mode?: boolean;
  detailed_metric?: boolean;
  value_to_metric?: boolean;
  share_threshold?: boolean;
  metadata?: Record<string, unknown>;
  descriptors?: EnvoyDescriptorSpec[];
}

export interface EnvoyDomainSpec {
  domain: string;
  descriptors?: EnvoyDescriptorSpec[];
}

/** Their map key of a descriptor within its level: `key`, or `key_value` when it has a value. */
export function compositeKey(key: string, value: string | undefined): string {
  return value ? `${key}_${value}` : key;
}

const EMPTY_KEY = "expected a key (envoyproxy/ratelimit: descriptor has empty key)";
const EMPTY_DOMAIN = "expected a domain (envoyproxy/ratelimit: config file cannot have empty domain)";

const BUCKETS: ReadonlySet<string> = new Set(["token_bucket", "leaky_bucket"]);

function checkRateLimit(r: EnvoyRateLimitSpec, ctx: z.RefinementCtx): void {
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: "custom", path, message });
  r.replaces?.forEach((entry, i) => {
    if (entry.name === "") issue(["replaces", i, "name"], "expected the name of the rule it replaces (envoyproxy/ratelimit: should not have an empty replaces entry)");
    else if (entry.name === r.name) issue(["replaces", i, "name"], `a rule cannot replace itself (${JSON.stringify(entry.name)} is this rule's name)`);
  });
  const unit = r.unit === undefined ? null : parseEnvoyUnit(r.unit);
  const sluiceFields = ["algorithm", "window", "period", "burst", "precision", "failureMode"] as const;
  if (r.unlimited) {
    // Theirs refuses only a valid unit beside `unlimited`, and ignores any other value.
    if (unit) issue(["unit"], "not allowed with unlimited: true (envoyproxy/ratelimit: should not specify rate limit unit when unlimited)");
    for (const field of sluiceFields) if (r[field] !== undefined) issue([field], "not allowed with unlimited: true (nothing is counted)");
    return;
  }
  if (r.window !== undefined && r.unit !== undefined) issue(["window"], "give unit or window, not both");
  if (r.period !== undefined && (r.unit !== undefined || r.window !== undefined)) issue(["period"], "give period alone, without unit or window");
  if (r.unit === undefined && r.window === undefined && r.period === undefined) {
    issue(["unit"], `required: one of ${UNITS_TEXT} (or Sluice's window or period)`);
  } else if (r.unit !== undefined && !unit) {
    issue(["unit"], `expected one of ${UNITS_TEXT}, got ${JSON.stringify(r.unit)} (envoyproxy/ratelimit: invalid rate limit unit)`);
  }
  if (r.requests_per_unit === undefined) {
    issue(["requests_per_unit"], "required (envoyproxy/ratelimit reads a missing one as 0, which puts every request over the limit: write 0 to mean that)");
  } else if (r.requests_per_unit === 0 && (r.algorithm !== undefined || r.window !== undefined || r.period !== undefined)) {
    issue(["requests_per_unit"], "expected ≥ 1 with algorithm, window or period (0 blocks every request; it needs none of them)");
  }
  if (r.period !== undefined && r.algorithm !== undefined) issue(["algorithm"], "not allowed with period (a calendar period is counted as a quota)");
  if (r.burst !== undefined && !BUCKETS.has(r.algorithm ?? "")) issue(["burst"], "only with algorithm token_bucket or leaky_bucket");
  if (r.precision !== undefined && r.algorithm !== "sliding_window_counter") issue(["precision"], "only with algorithm sliding_window_counter");
}

export const envoyRateLimitSchema: z.ZodType<EnvoyRateLimitSpec> = z
  .strictObject({
    name: z.string().max(256).optional(),
    replaces: z
      .array(z.strictObject({ name: z.string("expected the name of the rule it replaces (envoyproxy/ratelimit: should not have an empty replaces entry)").max(256) }))
      .max(100)
      .optional(),
    unit: z.string().max(32).optional(),
    requests_per_unit: uint32.optional(),
    unlimited: z.boolean().optional(),
    algorithm: z
      .enum(ENVOY_RULE_ALGORITHMS, `expected ${ENVOY_RULE_ALGORITHMS.join(", ")} (concurrency needs a release the rate limit service protocol has no call for)`)
      .optional(),
    window: windowSchema.optional(),
    period: z.enum(PERIODS).optional(),
    burst: z.number().int("expected an integer").min(1, "expected an integer ≥ 1").max(1_000_000_000).optional(),
    precision: z.number().int("expected an integer").min(1).max(60).optional(),
    failureMode: z.enum(FAILURE_MODES).optional(),
  })
  .superRefine(checkRateLimit);

/** A level's descriptors: no two with the same composite key (their "duplicate descriptor composite key"). */
function uniqueLevel(list: EnvoyDescriptorSpec[], ctx: z.RefinementCtx): void {
  const seen = new Map<string, number>();
  list.forEach((d, i) => {
    const composite = compositeKey(d.key, d.value);
    const first = seen.get(composite);
    if (first !== undefined) {
      ctx.addIssue({ code: "custom", path: [i], message: `duplicate descriptor: its composite key ${JSON.stringify(composite)} is also at [${first}] of this list` });
    } else seen.set(composite, i);
  });
}

export const envoyDescriptorSchema: z.ZodType<EnvoyDescriptorSpec> = z.lazy(() =>
  z
    .strictObject({
      key: z.string(EMPTY_KEY).min(1, EMPTY_KEY).max(1024),
      value: z.string().max(1024).optional(),
      rate_limit: envoyRateLimitSchema.optional(),
      shadow_mode: z.boolean().optional(),
      quota_mode: z.boolean().optional(),
      detailed_metric: z.boolean().optional(),
      value_to_metric: z.boolean().optional(),
      share_threshold: z.boolean().optional(),
      // Any mapping (theirs passes it through as response metadata); plain values, as YAML gives them.
      metadata: z.record(z.string(), z.unknown()).optional(),
      descriptors: envoyDescriptorListSchema.optional(),
    })
    .superRefine((d, ctx) => {
      const composite = compositeKey(d.key, d.value);
      if (d.share_threshold && !composite.includes("*")) {
        ctx.addIssue({ code: "custom", path: ["share_threshold"], message: `only with a wildcard value (containing *); ${JSON.stringify(composite)} has none` });
      }
    }),
  // An id, so that schema generators (the admin API's OpenAPI document) refer to the recursion by name.
).meta({ id: "EnvoyDescriptor" });

const envoyDescriptorListSchema: z.ZodType<EnvoyDescriptorSpec[]> = z.lazy(() => z.array(envoyDescriptorSchema).max(10_000).superRefine(uniqueLevel));

export const envoyDomainSchema = z.strictObject({
  domain: z.string(EMPTY_DOMAIN).min(1, EMPTY_DOMAIN).max(256),
  descriptors: envoyDescriptorListSchema.optional(),
});

export const rateLimitServiceSchema = z
  .strictObject({
    /** What a `ShouldRateLimit` for a domain the policy lacks answers: `ok` (theirs), or `error`. */
    unknownDomain: z.enum(UNKNOWN_DOMAIN_ANSWERS).default("ok"),
    /** Their global SHADOW_MODE: every descriptor is counted, every answer is OK. */
    shadowMode: z.boolean().default(false),
    domains: z.array(envoyDomainSchema).max(1000).default([]),
  })
  .superRefine((s, ctx) => {
    const seen = new Map<string, number>();
    s.domains.forEach((d, i) => {
      const first = seen.get(d.domain);
      if (first !== undefined) ctx.addIssue({ code: "custom", path: ["domains", i, "domain"], message: `duplicate domain ${JSON.stringify(d.domain)} (also domains[${first}])` });
      else seen.set(d.domain, i);
    });
  });

export type RateLimitServiceSpec = z.output<typeof rateLimitServiceSchema>;
export type RateLimitServiceInput = z.input<typeof rateLimitServiceSchema>;

/** The section's defaults: a policy whose section equals them has none (export leaves it out). */
export function isEmptyRateLimitService(s: RateLimitServiceSpec | undefined): boolean {
  return s === undefined || (s.domains.length === 0 && s.unknownDomain === "ok" && !s.shadowMode);
}

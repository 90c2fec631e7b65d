/**
 * The `rateLimitService` section as the published document carries it (`CompiledPolicyBody.
 * rateLimitService`, present only when the policy has the section): per domain, the descriptor
 * tree in declaration order (wildcards match in that order), each rule with its stable id and its
 * numbers resolved. The decision path walks it through lib/policy/envoy/match.ts, which indexes a
 * document once (by composite key, wildcards pre-split) and caches the index per document.
 */
import { z } from "zod";
import { FAILURE_MODES, PERIODS, type FailureMode, type Period } from "../types";
import { ENVOY_RULE_ALGORITHMS, UNKNOWN_DOMAIN_ANSWERS, type EnvoyRuleAlgorithm } from "./schema";
import { ENVOY_UNITS, UNKNOWN_UNIT, type ReportedUnit } from "./units";

/** How a rule counts: `envoy` is theirs (a fixed window aligned to the epoch; every hit counts, an
 * over-limit one too); a Sluice algorithm (a denied hit consumes nothing); `quota`, a calendar period. */
export type EnvoyCounting = "envoy" | EnvoyRuleAlgorithm | "quota";
export const ENVOY_COUNTINGS = ["envoy", ...ENVOY_RULE_ALGORITHMS, "quota"] as const;

export interface CompiledEnvoyRule {
  /** Stable while domain, descriptor path and counting stay (numbers may change): counters survive edits. */
  id: string;
  /** `rate_limit.name`, "" when unnamed: what `replaces` refers to and `current_limit.name` says. */
  name: string;
  replaces: string[];
  /** Never counted; answers OK with limit_remaining 2³²−1. The fields below are then 0 / empty. */
  unlimited: boolean;
  requestsPerUnit: number;
  /** What `current_limit.unit` says: the unit, the unit a window equals, DAY/MONTH for a period, else UNKNOWN. */
  unit: ReportedUnit;
  counting: EnvoyCounting;
  /** The window's length (the unit's, or Sluice's `window`); 0 for a period and for unlimited. */
  windowMs: number;
  period: Period | null;
  /** Bucket size for the buckets (= requestsPerUnit unless set). */
  burst: number;
  /** Sub-windows of sliding_window_counter (1 = the plain formula). */
  precision: number;
  /** null: the policy's default failure mode. */
  failureMode: FailureMode | null;
}

export interface CompiledEnvoyDescriptor {
  key: string;
  /** "" for a key-only descriptor (it matches every value, and counts each one apart). */
  value: string;
  rule: CompiledEnvoyRule | null;
  shadowMode: boolean;
  quotaMode: boolean;
  detailedMetric: boolean;
  valueToMetric: boolean;
  shareThreshold: boolean;
  metadata: Record<string, unknown> | null;
  descriptors: CompiledEnvoyDescriptor[];
}

export interface CompiledEnvoyDomain {
  domain: string;
  descriptors: CompiledEnvoyDescriptor[];
}

export interface CompiledEnvoyService {
  unknownDomain: (typeof UNKNOWN_DOMAIN_ANSWERS)[number];
  shadowMode: boolean;
  domains: CompiledEnvoyDomain[];
}

const count = z.number().int().min(0);

const compiledRuleSchema = z.strictObject({
  id: z.string().min(1),
  name: z.string(),
  replaces: z.array(z.string()),
  unlimited: z.boolean(),
  requestsPerUnit: count.max(4_294_967_295),
  unit: z.enum([...ENVOY_UNITS, UNKNOWN_UNIT]),
  counting: z.enum(ENVOY_COUNTINGS),
  windowMs: count,
  period: z.enum(PERIODS).nullable(),
  burst: count,
  precision: z.number().int().min(1),
  failureMode: z.enum(FAILURE_MODES).nullable(),
});

const compiledDescriptorSchema: z.ZodType<CompiledEnvoyDescriptor> = z.lazy(() =>
  z.strictObject({
    key: z.string().min(1),
    value: z.string(),
    rule: compiledRuleSchema.nullable(),
    shadowMode: z.boolean(),
    quotaMode: z.boolean(),
    detailedMetric: z.boolean(),
    valueToMetric: z.boolean(),
    shareThreshold: z.boolean(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    descriptors: z.array(compiledDescriptorSchema),
  }),
);

export const compiledEnvoyServiceSchema = z.strictObject({
  unknownDomain: z.enum(UNKNOWN_DOMAIN_ANSWERS),
  shadowMode: z.boolean(),
  domains: z.array(z.strictObject({ domain: z.string().min(1), descriptors: z.array(compiledDescriptorSchema) })),
});

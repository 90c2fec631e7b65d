/**
 * The zod schema of a compiled policy document, for documents read back from Redis or Postgres.
 * A document that fails it, or whose checksum does not match its body, is refused: the reader
 * keeps the last good document (a bad document never replaces the last good one).
 */
import { z } from "zod";
import { policyChecksum } from "./compile";
import { COMPILED_SCHEMA_VERSION, type CompiledPolicy } from "./compiled";
import { compiledEnvoyServiceSchema } from "./envoy/compiled";
import { issuesFromZod, type ParseResult } from "./policy-file";
import { PLAN_CHANGE_RULES } from "./plan-change";
import { BOUNDARY_BURSTS } from "./requirements";
import { ALGORITHMS, FAILURE_MODES, MODES, OVERAGES, PERIODS, SCOPES, SHARES, TENANT_STATUSES } from "./types";

const count = z.number().int().min(0);
const positive = z.number().int().min(1);

const compiledLimitSchema = z.strictObject({
  id: z.string().min(1),
  name: z.string(),
  operation: z.string().min(1),
  scope: z.enum(SCOPES),
  algorithm: z.enum(ALGORITHMS),
  limit: positive,
  windowMs: count,
  burst: positive,
  precision: positive,
  mode: z.enum(MODES),
  maxDelayMs: count,
  leaseTtlMs: count,
  regions: z.enum(["split", "shared"]).optional(),
});

const compiledQuotaSchema = z.strictObject({
  id: z.string().min(1),
  operation: z.string().min(1),
  period: z.enum(PERIODS),
  limit: positive,
  overage: z.enum(OVERAGES),
});

const compiledOverrideSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("limit"),
    operation: z.string(),
    scope: z.enum(SCOPES),
    limit: compiledLimitSchema,
    expiresAtMs: z.number().int().nullable(),
  }),
  z.strictObject({
    kind: z.literal("quota"),
    operation: z.string(),
    period: z.enum(PERIODS),
    quota: compiledQuotaSchema,
    expiresAtMs: z.number().int().nullable(),
  }),
]);

const thresholds = z.array(positive).max(10);
const billing = z.strictObject({ anchor: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), timeZone: z.string().min(1) });
const billingChange = z.strictObject({ atMs: z.number().int(), previous: billing.nullable() });
const planChange = z.strictObject({
  atMs: z.number().int(),
  fromTier: z.string(),
  rule: z.enum(PLAN_CHANGE_RULES),
  quotas: z.array(z.strictObject({ quotaId: z.string().min(1), operation: z.string(), period: z.enum(PERIODS), limit: positive })),
});

const fraction = z.number().min(0).max(1);
const requirementFields = { accuracy: fraction.optional(), boundaryBurst: z.enum(BOUNDARY_BURSTS).optional() };
const compiledRequirementsSchema = z.strictObject({
  ...requirementFields,
  rejectP95Ms: count.optional(),
  operations: z.array(
    z.strictObject({ operation: z.string(), ...requirementFields, rejectP95Ms: count.optional(), failureMode: z.enum(FAILURE_MODES).optional() }),
  ),
  limits: z.array(
    z.strictObject({ tier: z.string(), operation: z.string(), scope: z.enum(SCOPES), algorithm: z.enum(ALGORITHMS).optional(), ...requirementFields }),
  ),
});

export const compiledPolicySchema = z.strictObject({
  schemaVersion: z.literal(COMPILED_SCHEMA_VERSION),
  defaults: z.strictObject({ failureMode: z.enum(FAILURE_MODES), planChange: z.enum(PLAN_CHANGE_RULES).optional() }),
  operations: z.record(
    z.string(),
    z.strictObject({ name: z.string(), cost: positive, failureMode: z.enum(FAILURE_MODES), match: z.array(z.string()) }),
  ),
  routes: z.array(z.strictObject({ method: z.string(), segments: z.array(z.string()), operation: z.string() })),
  tiers: z.record(
    z.string(),
    z.strictObject({
      name: z.string(),
      weight: positive,
      limits: z.array(compiledLimitSchema),
      quotas: z.array(compiledQuotaSchema),
      thresholds: thresholds.optional(),
    }),
  ),
  globalCaps: z.array(
    z.strictObject({
      id: z.string().min(1),
      operation: z.string(),
      limit: positive,
      windowMs: positive,
      share: z.enum(SHARES),
      regions: z.enum(["split", "shared"]).optional(),
    }),
  ),
  tenants: z.record(
    z.string(),
    z.strictObject({
      slug: z.string(),
      name: z.string(),
      tier: z.string(),
      status: z.enum(TENANT_STATUSES),
      overrides: z.array(compiledOverrideSchema),
      billing: billing.optional(),
      thresholds: thresholds.optional(),
      billingChange: billingChange.optional(),
      planChange: planChange.optional(),
    }),
  ),
  requirements: compiledRequirementsSchema.optional(),
  rateLimitService: compiledEnvoyServiceSchema.optional(),
  approval: z.strictObject({ beyondPercent: z.number().min(0).max(100), globalCapChange: z.boolean(), adminBypass: z.boolean() }).optional(),
  version: positive,
  checksum: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.string(),
});

/**
 * Parses a compiled document (a JSON string or an already-decoded value), checks its shape, that
 * its references resolve (routes → operations, tenants → tiers) and that its checksum matches.
 */
export function parseCompiledPolicy(input: unknown): ParseResult<CompiledPolicy> {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch {
      return { ok: false, issues: [{ path: "", message: "not JSON" }] };
    }
  }
  const result = compiledPolicySchema.safeParse(value);
  if (!result.success) return { ok: false, issues: issuesFromZod(result.error) };
  const doc = result.data as CompiledPolicy;
  const issues = [];
  for (const [i, route] of doc.routes.entries()) {
    if (!Object.hasOwn(doc.operations, route.operation)) {
      issues.push({ path: `routes[${i}].operation`, message: `unknown operation ${JSON.stringify(route.operation)}` });
    }
  }
  for (const [slug, tenant] of Object.entries(doc.tenants)) {
    if (!Object.hasOwn(doc.tiers, tenant.tier)) {
      issues.push({ path: `tenants.${slug}.tier`, message: `unknown tier ${JSON.stringify(tenant.tier)}` });
    }
  }
  if (issues.length === 0 && policyChecksum(doc) !== doc.checksum) {
    issues.push({ path: "checksum", message: "does not match the document body" });
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: doc };
}

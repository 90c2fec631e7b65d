/**
 * The policy file (docs/policy-file.md): the public, declarative format of `sluice apply -f FILE` and
 * `POST /api/v1/policy/apply`. Parsing is strict: unknown fields are errors, every error names its
 * path (`tiers[0].limits[3].window: expected a duration like 30s, got "soon"`).
 */
import { z } from "zod";
import { approvalSchema } from "./approval";
import { parseDurationMs } from "./duration";
import { isBillingAnchor } from "./billing-period";
import { PLAN_CHANGE_RULES } from "./plan-change";
import { rateLimitServiceSchema } from "./envoy/schema";
import { checkRequirementRefs, requirementsSchema } from "./requirements";
import { isKnownTimeZone } from "./zoned-time";
import {
  ALGORITHMS,
  ANY_OPERATION,
  FAILURE_MODES,
  MODES,
  OVERAGES,
  PERIODS,
  REGION_MODES,
  SCOPES,
  SHARES,
  TENANT_STATUSES,
} from "./types";

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const name = (what: string) =>
  z.string().regex(NAME, `expected a ${what} of lowercase letters, digits, - and _ (at most 63)`);

export const duration = z.string().superRefine((value, ctx) => {
  if (parseDurationMs(value) === null) {
    ctx.addIssue({ code: "custom", message: `expected a duration like 30s, got ${JSON.stringify(value)}` });
  }
});

const positiveInt = (max = 1_000_000_000) =>
  z.number({ error: (issue) => (issue.input === undefined ? "required" : "expected an integer") }).int("expected an integer").min(1, "expected an integer ≥ 1").max(max, `expected an integer ≤ ${max}`);

const METHOD_PATH = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|\*) \/[^\s]*$/;
export const matchPattern = z
  .string()
  .max(512)
  .regex(METHOD_PATH, 'expected "METHOD /path" with * for one segment and ** for the rest');

export const operationSchema = z.strictObject({
  name: name("operation name"),
  match: z.array(matchPattern).max(100).default([]),
  cost: positiveInt(1_000_000).default(1),
  failureMode: z.enum(FAILURE_MODES).optional(),
});

const operationRef = z.union([z.literal(ANY_OPERATION), name("operation name")]);

/** `regions` of a limit or global cap (docs/regions.md); absent means `local`. */
/**
 * The algorithms a `shared` limit may use: their counters only add up (a window's count), so what one
 * region admitted can be added to another's counter of the same window (lib/regions/replication.ts).
 */
const SHARED_ALGORITHMS: ReadonlySet<string> = new Set(["fixed_window", "sliding_window_counter"]);
const SHARED_WHY = "only fixed_window and sliding_window_counter count in windows another region's admissions can be added to (docs/regions.md)";

const regionsField = z.enum(REGION_MODES, `expected ${REGION_MODES.join(", ")}`).optional();

export const limitSchema = z
  .strictObject({
    operation: operationRef,
    scope: z.enum(SCOPES),
    algorithm: z.enum(ALGORITHMS),
    limit: positiveInt(),
    window: duration.optional(),
    burst: positiveInt().optional(),
    precision: positiveInt(60).optional(),
    mode: z.enum(MODES).default("reject"),
    maxDelay: duration.optional(),
    leaseTtl: duration.optional(),
    regions: regionsField,
  })
  .superRefine((limit, ctx) => {
    const need = (field: keyof typeof limit, why: string) =>
      limit[field] === undefined && ctx.addIssue({ code: "custom", path: [field], message: `required ${why}` });
    const forbid = (field: keyof typeof limit, why: string) =>
      limit[field] !== undefined && ctx.addIssue({ code: "custom", path: [field], message: `not allowed ${why}` });
    if (limit.algorithm === "concurrency") {
      forbid("window", "for algorithm concurrency (use leaseTtl)");
    } else {
      need("window", `for algorithm ${limit.algorithm}`);
      forbid("leaseTtl", `for algorithm ${limit.algorithm} (only concurrency)`);
    }
    if (limit.burst !== undefined && limit.algorithm !== "token_bucket" && limit.algorithm !== "leaky_bucket") {
      forbid("burst", `for algorithm ${limit.algorithm} (only token_bucket and leaky_bucket)`);
    }
    if (limit.precision !== undefined && limit.algorithm !== "sliding_window_counter") {
      forbid("precision", `for algorithm ${limit.algorithm} (only sliding_window_counter)`);
    }
    if (limit.mode === "delay") {
      need("maxDelay", "when mode is delay");
      if (limit.algorithm !== "leaky_bucket" && limit.algorithm !== "token_bucket") {
        ctx.addIssue({ code: "custom", path: ["mode"], message: "delay is only supported by leaky_bucket and token_bucket" });
      }
    } else {
      forbid("maxDelay", "unless mode is delay");
    }
    if (limit.regions === "shared" && !SHARED_ALGORITHMS.has(limit.algorithm)) {
      ctx.addIssue({ code: "custom", path: ["regions"], message: `shared is not supported for algorithm ${limit.algorithm}: ${SHARED_WHY}` });
    }
  });

export const quotaSchema = z.strictObject({
  operation: operationRef,
  period: z.enum(PERIODS),
  limit: positiveInt(1_000_000_000_000),
  overage: z.enum(OVERAGES).default("block"),
});

export const globalCapSchema = z
  .strictObject({
    operation: operationRef,
    limit: positiveInt(),
    window: duration,
    share: z.enum(SHARES).default("none"),
    regions: regionsField,
  })
  .superRefine((cap, ctx) => {
    // A weighted cap also decides from which tenants were active, which is not replicated.
    if (cap.regions === "shared" && cap.share === "weighted") {
      ctx.addIssue({ code: "custom", path: ["regions"], message: "shared is not supported with share: weighted (each region's tenant activity is its own): use share: none, or regions: local or split" });
    }
  });

/**
 * Quota notification thresholds, in percent of each quota (a tier's, overridable per tenant;
 * default 80 and 100): docs/billing-periods.md, "Threshold notifications".
 */
export const thresholdsSchema = z
  .array(z.number().int("expected an integer percent").min(1, "expected a percent ≥ 1").max(1000, "expected a percent ≤ 1000"))
  .max(10)
  .refine((t) => new Set(t).size === t.length, "expected distinct percents");

export const tierSchema = z.strictObject({
  name: name("tier name"),
  weight: z.number({ error: "expected a whole number from 1 to 1000" }).int("expected a whole number from 1 to 1000").min(1, "expected a whole number from 1 to 1000").max(1000, "expected a whole number from 1 to 1000").default(1),
  limits: z.array(limitSchema).max(200).default([]),
  quotas: z.array(quotaSchema).max(50).default([]),
  thresholds: thresholdsSchema.optional(),
});

const isoInstant = z.iso.datetime({ offset: true, message: "expected an ISO 8601 instant like 2027-01-01T00:00:00Z" });

/** Replaces the tier's limit (with `scope`) or quota (with `period`) for one operation. */
export const overrideSchema = z
  .strictObject({
    operation: operationRef,
    scope: z.enum(SCOPES).optional(),
    period: z.enum(PERIODS).optional(),
    limit: positiveInt(1_000_000_000_000),
    algorithm: z.enum(ALGORITHMS).optional(),
    window: duration.optional(),
    burst: positiveInt().optional(),
    overage: z.enum(OVERAGES).optional(),
    expiresAt: isoInstant.optional(),
  })
  .superRefine((o, ctx) => {
    if ((o.scope === undefined) === (o.period === undefined)) {
      ctx.addIssue({ code: "custom", path: ["scope"], message: "expected exactly one of scope (a limit) or period (a quota)" });
    }
  });

export const API_KEY_PATTERN = /^[A-Za-z0-9_\-.]{16,128}$/;

export const keySchema = z.strictObject({
  name: name("key name"),
  /** Plaintext, accepted on apply and stored as SHA-256; never exported. */
  key: z.string().regex(API_KEY_PATTERN, "expected 16–128 characters of letters, digits, _ - .").optional(),
});

/**
 * A tenant's billing period (docs/billing-periods.md): `month` quotas run from the anchor's day of
 * month at local midnight in `timeZone`. YAML 1.1 readers turn an unquoted date into a Date: it
 * is taken as the date it names (UTC).
 */
export const billingSchema = z.strictObject({
  anchor: z.preprocess((v) => (v instanceof Date && !Number.isNaN(v.getTime()) ? v.toISOString().slice(0, 10) : v), z.string().max(40)),
  timeZone: z.string().max(64),
});

export const tenantSchema = z.strictObject({
  slug: name("tenant slug"),
  name: z.string().min(1).max(200),
  tier: name("tier name"),
  status: z.enum(TENANT_STATUSES).default("active"),
  billing: billingSchema.optional(),
  thresholds: thresholdsSchema.optional(),
  overrides: z.array(overrideSchema).max(100).default([]),
  keys: z.array(keySchema).max(1000).default([]),
});

export const policyFileSchema = z
  .strictObject({
    version: z.literal(1, "expected 1"),
    defaults: z
      .strictObject({
        failureMode: z.enum(FAILURE_MODES).default("open"),
        /** How a tier change mid-period treats quotas (lib/policy/plan-change.ts); absent: full. */
        planChange: z.enum(PLAN_CHANGE_RULES).optional(),
      })
      .default({ failureMode: "open" }),
    operations: z.array(operationSchema).max(1000).default([]),
    tiers: z.array(tierSchema).max(100).default([]),
    globalCaps: z.array(globalCapSchema).max(100).default([]),
    tenants: z.array(tenantSchema).max(100_000).default([]),
    /** What `sluice certify` must prove (lib/policy/requirements.ts); optional, with defaults. */
    requirements: requirementsSchema.optional(),
    /** Envoy rate limit service domains (lib/policy/envoy/schema.ts); optional. */
    rateLimitService: rateLimitServiceSchema.optional(),
    /** Two-person approval of publishes beyond a blast radius (lib/policy/approval.ts); optional. */
    approval: approvalSchema.optional(),
  })
  .superRefine((file, ctx) => {
    const unique = <T>(items: T[], key: (t: T) => string, path: (string | number)[], field: string) => {
      const seen = new Set<string>();
      items.forEach((item, i) => {
        const k = key(item);
        if (seen.has(k)) ctx.addIssue({ code: "custom", path: [...path, i, field], message: `duplicate ${field} ${JSON.stringify(k)}` });
        seen.add(k);
      });
    };
    unique(file.operations, (o) => o.name, ["operations"], "name");
    unique(file.tiers, (t) => t.name, ["tiers"], "name");
    unique(file.tenants, (t) => t.slug, ["tenants"], "slug");

    const operations = new Set(file.operations.map((o) => o.name));
    const tiers = new Set(file.tiers.map((t) => t.name));
    const knownOperation = (op: string, path: (string | number)[]) => {
      if (op !== ANY_OPERATION && !operations.has(op)) {
        ctx.addIssue({ code: "custom", path: [...path, "operation"], message: `unknown operation ${JSON.stringify(op)}` });
      }
    };
    file.tiers.forEach((tier, t) => {
      tier.limits.forEach((l, i) => knownOperation(l.operation, ["tiers", t, "limits", i]));
      tier.quotas.forEach((q, i) => knownOperation(q.operation, ["tiers", t, "quotas", i]));
      const cells = new Set<string>();
      tier.limits.forEach((l, i) => {
        const cell = `${l.operation}|${l.scope}|${l.algorithm}`;
        if (cells.has(cell)) {
          ctx.addIssue({ code: "custom", path: ["tiers", t, "limits", i], message: `duplicate limit for operation ${l.operation}, scope ${l.scope}, algorithm ${l.algorithm}` });
        }
        cells.add(cell);
      });
      const periods = new Set<string>();
      tier.quotas.forEach((q, i) => {
        const cell = `${q.operation}|${q.period}`;
        if (periods.has(cell)) ctx.addIssue({ code: "custom", path: ["tiers", t, "quotas", i], message: `duplicate quota for operation ${q.operation}, period ${q.period}` });
        periods.add(cell);
      });
    });
    file.globalCaps.forEach((g, i) => knownOperation(g.operation, ["globalCaps", i]));
    const capCells = new Set<string>();
    file.globalCaps.forEach((g, i) => {
      const cell = `${g.operation}|${parseDurationMs(g.window)}`;
      if (capCells.has(cell)) ctx.addIssue({ code: "custom", path: ["globalCaps", i], message: `duplicate global cap for operation ${g.operation}, window ${g.window}` });
      capCells.add(cell);
    });
    file.tenants.forEach((tenant, t) => {
      if (!tiers.has(tenant.tier)) {
        ctx.addIssue({ code: "custom", path: ["tenants", t, "tier"], message: `unknown tier ${JSON.stringify(tenant.tier)}` });
      }
      tenant.overrides.forEach((o, i) => knownOperation(o.operation, ["tenants", t, "overrides", i]));
      if (tenant.billing) {
        const at = (field: string, message: string) => ctx.addIssue({ code: "custom", path: ["tenants", t, "billing", field], message: `tenant ${tenant.slug}: ${message}` });
        if (!isBillingAnchor(tenant.billing.anchor)) at("anchor", `expected a date YYYY-MM-DD, got ${JSON.stringify(tenant.billing.anchor)}`);
        if (!isKnownTimeZone(tenant.billing.timeZone)) at("timeZone", `unknown time zone ${JSON.stringify(tenant.billing.timeZone)} (expected an IANA name like America/Los_Angeles or UTC)`);
      }
      unique(tenant.keys, (k) => k.name, ["tenants", t, "keys"], "name");
    });
    if (file.requirements) for (const issue of checkRequirementRefs(file.requirements, file)) ctx.addIssue({ code: "custom", ...issue });
  });

export type PolicyFile = z.output<typeof policyFileSchema>;
export type PolicyFileInput = z.input<typeof policyFileSchema>;
export type OperationSpec = PolicyFile["operations"][number];
export type TierSpec = PolicyFile["tiers"][number];
export type LimitSpec = TierSpec["limits"][number];
export type QuotaSpec = TierSpec["quotas"][number];
export type GlobalCapSpec = PolicyFile["globalCaps"][number];
export type TenantSpec = PolicyFile["tenants"][number];
export type OverrideSpec = TenantSpec["overrides"][number];

/** One validation problem, with the path in the file's own notation: `tiers[0].limits[3].window`. */
export interface PolicyIssue {
  path: string;
  message: string;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

export function issuesFromZod(error: z.ZodError): PolicyIssue[] {
  return error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: PolicyIssue[] };

/** Validates an already-decoded document (from YAML or JSON). */
export function parsePolicyFile(input: unknown): ParseResult<PolicyFile> {
  const result = policyFileSchema.safeParse(input);
  return result.success ? { ok: true, value: result.data } : { ok: false, issues: issuesFromZod(result.error) };
}

/** `tiers[0].limits[3].window: expected a duration like 30s, got "soon"` */
export function formatIssue(issue: PolicyIssue): string {
  return issue.path ? `${issue.path}: ${issue.message}` : issue.message;
}

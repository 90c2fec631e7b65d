/**
 * The control plane's admin REST API (app/api/v1/**) as an OpenAPI 3.1 document, served at
 * `GET /api/v1/openapi.json`. Query strings and bodies are the zod schemas the route handlers
 * validate with (lib/services/*); answers are described here in zod, and
 * lib/openapi/admin.test.ts proves their types equal the services' results.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { ERROR_STATUS } from "../errors";
import { FAILURE_MODES } from "../policy/types";
import { policyFileSchema } from "../policy/policy-file";
import { failureModesInput } from "../services/policy/apply-failure-modes";
import { applyQuerySchema } from "../services/policy/apply-policy-file";
import { exportQuerySchema } from "../services/policy/export-policy-file";
import { billingExportQuerySchema } from "../services/billing/billing-export";
import { billingDictionaryQuerySchema } from "../services/billing/billing-format";
import { publishRequestSchema } from "../services/policy/publish-policy";
import { rollbackRequestSchema } from "../services/policy/rollback-policy";
import { ROLLOUT_STATES, rolloutSpecSchema } from "../policy/rollout";
import { rolloutActionSchema } from "../services/rollout/control-rollout";
import { APPROVAL_KINDS, APPROVAL_STATES } from "../policy/approval";
import { approvalListQuerySchema, approveBodySchema, rejectBodySchema } from "../services/approval/decide-approval";
import { quotasQuerySchema, topQuerySchema, usageQuerySchema } from "../services/observe/usage-query";

const named = <S extends z.ZodType>(id: string, schema: S): S => schema.meta({ id }) as S;
const count = z.number().int().min(0);
const isoDate = z.string().meta({ format: "date-time" });

export const adminErrorSchema = z.object({
  error: z.object({
    code: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]),
    message: z.string(),
    field: z.string().nullable(),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

/** Denials by the decision API's reason (docs/decision-api.md); `not_recorded`: minutes recorded before reasons were. */
export const deniedByReasonSchema = z.object({
  rate_limited: count,
  quota_exhausted: count,
  concurrency_limited: count,
  cost_exceeds_limit: count,
  unknown_key: count,
  tenant_suspended: count,
  store_unavailable: count,
  not_recorded: count,
});
const shareSchema = z.number().min(0).max(1);

export const usagePointSchema = z.object({
  t: isoDate,
  allowed: count,
  denied: count,
  shadowDenied: count,
  degraded: count,
  denyShare: shareSchema.meta({ description: "every denial (401, 403, 429, 503) / all decisions" }),
  deniedByReason: named("DeniedByReason", deniedByReasonSchema),
  share429: shareSchema.meta({ description: "429s (rate_limited, quota_exhausted, concurrency_limited, cost_exceeds_limit) / all decisions" }),
});

export const usageAnswerSchema = z.object({
  from: isoDate,
  to: isoDate,
  granularity: z.string(),
  tenant: z.string().nullable(),
  tier: z.string().nullable(),
  points: z.array(usagePointSchema),
  totals: z.object({ decisions: count, denied: count, deniedByReason: deniedByReasonSchema, share429: shareSchema }),
});

const topTenant = z.object({ tenant: z.string(), tier: z.string(), requests: count, denied: count });
export const topAnswerSchema = z.object({
  from: isoDate,
  to: isoDate,
  by: z.string(),
  tenants: z.array(topTenant),
  keys: z.array(topTenant.extend({ keyPrefix: z.string() })),
});

export const quotaBurnSchema = z.object({
  tenant: z.string(),
  tier: z.string(),
  quotaId: z.string(),
  operation: z.string(),
  period: z.string(),
  limit: count,
  overage: z.enum(["block", "bill"]),
  used: count,
  remaining: count,
  projected: count,
  runsOutAt: isoDate.nullable(),
  usedShare: z.number().min(0),
  retired: z.boolean().meta({ description: "the live policy no longer gives the tenant this quota (retired by a publish or rollback): its usage stays, with the limit it had; not projected" }),
});
export const quotasAnswerSchema = z.object({ period: z.string(), quotas: z.array(quotaBurnSchema) });

export const billingPeriodSchema = z.object({
  period: z.string(),
  status: z.enum(["open", "closed"]),
  closedAt: isoDate.nullable(),
  revision: count,
  checksums: z.record(z.string(), z.string()),
});

export const approvalViewSchema = z.object({
  id: z.string(),
  kind: z.enum(APPROVAL_KINDS),
  state: z.enum(APPROVAL_STATES),
  action: z.string().meta({ description: "What approving does, in words" }),
  liveVersion: count.meta({ description: "The version live when it was requested" }),
  rollout: z.string().nullable(),
  step: count.nullable().meta({ description: "A rollout-step request: the 0-based step it lets the rollout enter" }),
  note: z.string().nullable(),
  reasons: z.array(z.string()).meta({ description: "Why a second person is needed (the approval rule's blast radius)" }),
  reachPercent: z.number().min(0).max(100),
  diff: z.array(z.object({ kind: z.enum(["added", "changed", "removed"]), entity: z.string(), text: z.string() })).meta({ description: "The changes the requester saw" }),
  requestedBy: z.string(),
  requestedAt: isoDate,
  decidedBy: z.string().nullable(),
  decidedAt: isoDate.nullable(),
  decisionReason: z.string().nullable(),
});
export const approvalOutcomeSchema = z.object({
  approval: approvalViewSchema,
  version: count.nullable().meta({ description: "The version the approval published, else null" }),
  rollout: z.string().nullable().meta({ description: "The rollout the approval started or moved, else null" }),
});

export const publishAnswerSchema = z.object({
  status: z.enum(["published", "unchanged", "approval_pending"]),
  version: count,
  checksum: z.string(),
  previousVersion: count.nullable(),
  regionsMissed: z.array(z.string()).optional().meta({ description: "With SLUICE_REGIONS: regions whose Redis could not be reached; they keep their last good version until the worker catches them up" }),
  approval: approvalViewSchema.optional().meta({ description: "With approval_pending (HTTP 202): the request waiting for a second person; nothing was published" }),
});
export const rollbackAnswerSchema = publishAnswerSchema.extend({
  draftReset: count.nullable().meta({ description: "Draft rows the rollback reset to the rolled-back document; null when it no longer validates" }),
  pendingDiscarded: count.meta({ description: "Unpublished draft changes the rollback discarded (rows that differed from the version live before it)" }),
  draftNote: z.string().optional().meta({ description: "Why the draft was not reset" }),
});
export const discardAnswerSchema = z.object({ version: count, changes: count });
export const failureModesAnswerSchema = z.object({
  status: z.enum(["published", "unchanged"]),
  version: count,
  previousVersion: count,
  changed: z.array(z.object({ field: z.string(), before: z.enum(FAILURE_MODES), after: z.enum(FAILURE_MODES) })),
});

const cohortFigures = z.object({
  decisions: count,
  denied: count.meta({ description: "Every denied decision (401, 403, 429, 503)" }),
  denied429: count.optional().meta({ description: "The 429s among them (absent on checks recorded before the guard told them apart)" }),
  share: z.number().min(0).max(1).meta({ description: "The 429 share: 429s / decisions, as the dashboards count it" }),
});
export const rolloutViewSchema = z.object({
  id: z.string(),
  state: z.enum(ROLLOUT_STATES),
  liveVersion: count.meta({ description: "The version everyone outside the cohort gets" }),
  candidateVersion: count.meta({ description: "The draft's version, which the cohort gets" }),
  author: z.string(),
  note: z.string().nullable(),
  createdAt: isoDate,
  endedAt: isoDate.nullable(),
  step: count.meta({ description: "0-based index into steps" }),
  stepLabel: z.string(),
  steps: z.array(z.object({ percent: z.number().min(0).max(100), bakeMs: count, label: z.string() })),
  stepStartedAt: isoDate,
  bakeEndsAt: isoDate.nullable(),
  cohort: z.object({
    canaries: z.array(z.string()),
    percent: z.number().min(0).max(100),
    tenants: count.meta({ description: "Tenants in the cohort now" }),
    of: count.meta({ description: "Tenants of the new version" }),
    members: z.array(z.string()).meta({ description: "The cohort's tenants (at most 50)" }),
  }),
  guardrails: z.object({
    maxDenyShareIncrease: z.number(),
    maxTenantDenyShareIncrease: z.number().meta({ description: "Points any one cohort tenant's 429 share may rise above its own before the rollout" }),
    storeErrors: z.boolean().meta({ description: "Store errors as the redis_errors alert defines them breach" }),
    maxRejectP95Ms: z.number().nullable().meta({ description: "Reject-path p95 limit; null: the policy's requirements.rejectP95 (default 50 ms)" }),
    pauseOnly: z.boolean(),
    minDecisions: count,
  }),
  lastCheck: z
    .object({
      at: isoDate,
      minute: isoDate,
      cohort: cohortFigures,
      control: cohortFigures,
      marginPoints: z.number(),
      verdict: z.enum(["holds", "breached", "too_few_decisions", "no_control"]),
      breaches: z
        .array(z.object({ guardrail: z.enum(["cohort_429_share", "tenant_429_share", "store_errors", "reject_latency"]), message: z.string(), tenants: z.array(z.string()) }))
        .optional()
        .meta({ description: "Each guardrail the minute broke, with the tenants that tripped it" }),
    })
    .nullable(),
  reason: z.string().nullable().meta({ description: "Why it stopped, paused or completed (a guardrail breach names the step, the figures and the tenants)" }),
  approval: approvalViewSchema.nullable().meta({ description: "The request for a second person the next step waits for" }),
});
export const rolloutAnswerSchema = z.object({ rollout: rolloutViewSchema.nullable() });
/** POST /api/v1/policy/rollout: started (200), or waiting for approval (202, `rollout` null). */
export const startRolloutAnswerSchema = z.object({ rollout: rolloutViewSchema.nullable(), approval: approvalViewSchema.optional() });

const planChange = z.object({
  entity: z.string(),
  key: z.string(),
  path: z.string(),
  before: z.record(z.string(), z.unknown()).nullable(),
  after: z.record(z.string(), z.unknown()).nullable(),
});
export const applyAnswerSchema = z.object({
  plan: z.object({ created: z.array(planChange), changed: z.array(planChange), deleted: z.array(planChange), warnings: z.array(z.string()) }),
  dryRun: z.boolean(),
  applied: z.boolean(),
  generatedKeys: z.array(z.object({ tenant: z.string(), name: z.string(), key: z.string() })).meta({ description: "Keys created with a generated secret: the plaintext, shown once" }),
});

const json = <S extends z.ZodType>(schema: S, description: string) => ({ description, content: { "application/json": { schema } } });

function registry(): OpenAPIRegistry {
  const r = new OpenAPIRegistry();
  const token = r.registerComponent("securitySchemes", "adminToken", {
    type: "http",
    scheme: "bearer",
    description: "An admin token (`sluice tokens create --kind admin --role …`); the UI's session cookie works too",
  });
  const security = [{ [token.name]: [] }];
  const ErrorBody = named("Error", adminErrorSchema);
  const errors = (...codes: (400 | 401 | 403 | 404 | 409 | 413 | 415 | 503)[]) => {
    const what: Record<number, string> = {
      400: "A bad parameter or body (error.field names it; invalid_policy lists every issue)",
      401: "No or a wrong admin token",
      403: "The token's role may not do this",
      404: "Not found",
      409: "Conflict",
      413: "Body too large",
      415: "Unsupported Content-Type",
      503: "Redis or the database is not answering",
    };
    return Object.fromEntries([401, 403, ...codes].map((c) => [c, json(ErrorBody, what[c]!)]));
  };
  const get = (path: string, operationId: string, summary: string, query: z.ZodObject | null, ok: ResponseConfig, tag: string, more: 404[] = []) =>
    r.registerPath({ method: "get", path, operationId, summary, tags: [tag], security, ...(query ? { request: { query } } : {}), responses: { 200: ok, ...errors(400, ...more) } });

  get("/api/v1/usage", "getUsage", "Decisions by outcome and denials by the decision API's reason over time (minute, hour or day buckets)", usageQuerySchema, json(named("Usage", usageAnswerSchema), "The series"), "usage");
  get("/api/v1/usage/top", "getTopConsumers", "Top tenants and API key prefixes by requests or denials", topQuerySchema, json(named("TopConsumers", topAnswerSchema), "Top consumers"), "usage");
  get("/api/v1/quotas", "getQuotas", "Quota burn per tenant and quota, with a projection to period end", quotasQuerySchema, json(named("Quotas", quotasAnswerSchema), "Quota burn"), "usage");
  get("/api/v1/billing/periods", "listBillingPeriods", "Billing months with status, revision and checksums", null, json(z.object({ periods: z.array(named("BillingPeriod", billingPeriodSchema)) }), "Billing periods"), "billing");
  get(
    "/api/v1/billing/exports",
    "exportBilling",
    "The month's billing export; the same bytes for the same period until an adjustment (X-Sluice-Checksum is their sha256). Reading never writes: a month before the first usage or after the current one is a 404",
    billingExportQuerySchema.strict(),
    {
      description: "The export (CSV, JSON or CloudEvents JSON lines, by format)",
      content: { "text/csv": { schema: z.string() }, "application/json": { schema: z.unknown() }, "application/cloudevents-batch+json": { schema: z.unknown() } },
    },
    "billing",
    [404],
  );
  get(
    "/api/v1/billing/dictionary",
    "getBillingDictionary",
    "What every column of the billing export means, with its unit (CSV by default, JSON with format=json); the exports link here",
    billingDictionaryQuerySchema,
    {
      description: "The dictionary",
      content: {
        "text/csv": { schema: z.string() },
        "application/json": {
          schema: named("BillingDictionary", z.object({ columns: z.array(z.object({ column: z.string(), json: z.string(), unit: z.string(), meaning: z.string() })) })),
        },
      },
    },
    "billing",
  );
  get(
    "/api/v1/policy/export",
    "exportPolicy",
    "The draft policy as a file: YAML, or JSON with format=json. No secrets",
    exportQuerySchema,
    { description: "The policy file", content: { "application/yaml": { schema: z.string() }, "application/json": { schema: z.record(z.string(), z.unknown()) } } },
    "policy",
  );
  r.registerPath({
    method: "post",
    path: "/api/v1/policy/apply",
    operationId: "applyPolicy",
    summary: "Apply a policy file to the draft (YAML or JSON by Content-Type); dryRun=1 answers the plan without writing",
    tags: ["policy"],
    security,
    request: {
      query: applyQuerySchema,
      body: { required: true, content: { "application/json": { schema: named("PolicyFile", policyFileSchema) }, "application/yaml": { schema: z.string() } } },
    },
    responses: { 200: json(named("ApplyResult", applyAnswerSchema), "The plan, and whether it was applied"), ...errors(400, 409, 413, 415) },
  });
  const post = (path: string, operationId: string, summary: string, body: z.ZodType | null, ok: ResponseConfig, codes: (400 | 404 | 409 | 503)[]) =>
    r.registerPath({
      method: "post",
      path,
      operationId,
      summary,
      tags: ["policy"],
      security,
      ...(body ? { request: { body: { required: false, content: { "application/json": { schema: body } } } } } : {}),
      responses: { 200: ok, ...errors(...codes) },
    });
  const accepted = (path: string, operationId: string, summary: string, body: z.ZodType, ok: ResponseConfig, pending: ResponseConfig) =>
    r.registerPath({
      method: "post",
      path,
      operationId,
      summary,
      tags: ["policy"],
      security,
      request: { body: { required: false, content: { "application/json": { schema: body } } } },
      responses: { 200: ok, 202: pending, ...errors(400, 409, 503) },
    });
  const PublishResult = named("PublishResult", publishAnswerSchema);
  accepted("/api/v1/policy/publish", "publishPolicy", "Compile the draft and make it live (or, under the policy's approval rule, request a second person's approval)", publishRequestSchema, json(PublishResult, "Published, or unchanged"), json(PublishResult, "Waiting for approval: nothing published"));
  post("/api/v1/policy/rollback", "rollbackPolicy", "Republish version N as a new version and reset the draft to it", rollbackRequestSchema, json(named("RollbackResult", rollbackAnswerSchema), "Rolled back"), [400, 404, 409, 503]);
  r.registerPath({
    method: "get",
    path: "/api/v1/policy/rollout",
    operationId: "getRollout",
    summary: "The running guarded rollout, else the last one (null: none yet)",
    tags: ["policy"],
    security,
    responses: { 200: json(named("RolloutAnswer", rolloutAnswerSchema), "The rollout"), ...errors(401, 403) },
  });
  const StartRollout = named("StartRolloutAnswer", startRolloutAnswerSchema);
  accepted("/api/v1/policy/rollout", "startRollout", "Start a guarded rollout of the draft: canaries, then steps of a share of tenants, each with a bake time", named("RolloutSpec", rolloutSpecSchema), json(StartRollout, "Started"), json(StartRollout, "Waiting for approval: nothing rolled out"));
  post("/api/v1/policy/rollout/promote", "promoteRollout", "Move the running rollout to its next step now (the last publishes to everyone)", rolloutActionSchema, json(named("RolloutAnswer", rolloutAnswerSchema), "Moved on"), [400, 409, 503]);
  post("/api/v1/policy/rollout/pause", "pauseRollout", "Stop advancing the running rollout; the cohort keeps the new version", rolloutActionSchema, json(named("RolloutAnswer", rolloutAnswerSchema), "Paused"), [400, 409]);
  post("/api/v1/policy/rollout/abort", "abortRollout", "End the running rollout: everyone back on the live version, the draft as it is", rolloutActionSchema, json(named("RolloutAnswer", rolloutAnswerSchema), "Aborted"), [400, 409, 503]);
  r.registerPath({
    method: "get",
    path: "/api/v1/policy/approvals",
    operationId: "listApprovals",
    summary: "Requests for a second person's approval of a publish or a rollout step, newest first",
    tags: ["policy"],
    security,
    request: { query: approvalListQuerySchema },
    responses: { 200: json(z.object({ approvals: z.array(named("Approval", approvalViewSchema)) }), "The requests"), ...errors(400) },
  });
  const ApprovalOutcome = named("ApprovalOutcome", approvalOutcomeSchema);
  const decision = (verb: "approve" | "reject", operationId: string, summary: string, body: z.ZodType, codes: (400 | 404 | 409 | 503)[]) =>
    r.registerPath({
      method: "post",
      path: `/api/v1/policy/approvals/{id}/${verb}`,
      operationId,
      summary,
      tags: ["policy"],
      security,
      request: { params: z.object({ id: z.string().meta({ description: "The request's id (apr_…)" }) }), body: { required: verb === "reject", content: { "application/json": { schema: body } } } },
      responses: { 200: json(ApprovalOutcome, verb === "approve" ? "Approved and done" : "Rejected: nothing published"), ...errors(...codes) },
    });
  decision("approve", "approveRequest", "Approve a pending request and do what it asks; refused (403) to its own requester", approveBodySchema, [400, 404, 409, 503]);
  decision("reject", "rejectRequest", "Reject a pending request with a reason: nothing is published", rejectBodySchema, [400, 404, 409]);
  post("/api/v1/policy/discard", "discardDraft", "Reset the draft to the live version (API keys stay)", null, json(named("DiscardResult", discardAnswerSchema), "The draft equals live"), [404, 409]);
  post(
    "/api/v1/policy/failure-modes",
    "applyFailureModes",
    "Apply failure modes to the live policy at once, as a new version changing only them",
    failureModesInput,
    json(named("FailureModesResult", failureModesAnswerSchema), "Published, or unchanged"),
    [400, 404, 409, 503],
  );
  r.registerPath({
    method: "get",
    path: "/api/v1/openapi.json",
    operationId: "openapi",
    summary: "This document",
    tags: ["meta"],
    responses: { 200: json(z.record(z.string(), z.unknown()), "OpenAPI 3.1") },
  });
  return r;
}

let cached: Record<string, unknown> | null = null;

/** The admin REST API's OpenAPI 3.1 document (built once per process). */
export function adminOpenApi(): Record<string, unknown> {
  cached ??= new OpenApiGeneratorV31(registry().definitions).generateDocument({
    openapi: "3.1.0",
    info: { title: "Sluice admin API", version: "1", description: "The control plane's REST API (docs/architecture.md): policy, usage, quotas and billing." },
  }) as unknown as Record<string, unknown>;
  return cached;
}

/**
 * The decision API as an OpenAPI 3.1 document (docs/decision-api.md), served at `GET /openapi.json`
 * by the decision server. Request bodies are the very zod schemas the server parses with
 * (lib/decision/request.ts); answers are described here in zod, and
 * lib/openapi/decision.test.ts proves their types equal the server's (DecisionAnswer, SettleAnswer).
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { checkSchema, MAX_BATCH, releaseSchema, settleSchema } from "../decision/request";
import { ALGORITHMS, OVERAGES, PERIODS, REASONS, SCOPES } from "../policy/types";
import { rlsJsonRequestSchema, rlsJsonResponseSchema } from "./rls-json";

export const explainedCheckSchema = z.object({
  name: z.string(),
  kind: z.string(),
  scope: z.string(),
  algorithm: z.string(),
  mode: z.string(),
  key: z.string(),
  allowed: z.boolean(),
  reason: z.string(),
  limit: z.number(),
  remaining: z.number(),
  resetSeconds: z.number(),
  retryAfterSeconds: z.number(),
  delayMs: z.number(),
  shadowDenied: z.boolean(),
});

const count = z.number().int().min(0);

export const decisionAnswerSchema = z.object({
  allowed: z.boolean(),
  status: z.union([z.literal(200), z.literal(401), z.literal(403), z.literal(429), z.literal(503)]).meta({
    description: "What to answer the end client: 200, 401 unknown key, 403 suspended tenant, 429 limited or quota spent, 503 fail-closed",
  }),
  reason: z.enum(REASONS),
  tenant: z.string().nullable(),
  tier: z.string().nullable(),
  operation: z.string().nullable(),
  policyVersion: count,
  limit: count.meta({ description: "The most restrictive limit's size" }),
  remaining: count,
  resetSeconds: count,
  retryAfterSeconds: count.meta({ description: "0 when allowed; else whole seconds after which the same request passes if nothing else consumes" }),
  delayMs: count.meta({ description: "Shaping limits (mode delay): hold the request this long" }),
  headers: z.record(z.string(), z.string()).meta({ description: "RateLimit, RateLimit-Policy, RateLimit-Limit/-Remaining/-Reset, Retry-After: copy them into the response" }),
  shadowDenied: z.boolean().optional(),
  degraded: z.boolean().optional(),
  leaseId: z.string().optional().meta({ description: "Concurrency leases taken (comma-separated): POST /v1/release" }),
  reservationId: z.string().optional().meta({ description: "With reserve: true, on an allowed decision: POST /v1/settle" }),
  dryRun: z.boolean().optional(),
  checks: z.array(explainedCheckSchema).optional(),
});

export const batchSchema = z.object({ requests: z.array(checkSchema).min(1).max(MAX_BATCH) });

export const settleAnswerSchema = z.object({
  reservationId: z.string(),
  reservedCost: count,
  actualCost: count,
  refunded: count.meta({ description: "max(0, reservedCost − actualCost), given back on every counter the decision committed" }),
  replayed: z.boolean().meta({ description: "This settle had been made before with the same actualCost: nothing more refunded" }),
});

const tenantUsageQuotaSchema = z.object({
  name: z.string(),
  quotaId: z.string(),
  operation: z.string(),
  period: z.enum(PERIODS),
  limit: count.meta({ description: "What the tenant may use this period (after a plan change: the usage carried plus the new quota's allowance)" }),
  used: count,
  remaining: count.meta({ description: "limit − used, never below 0: what a dry-run /v1/check answers now" }),
  overage: z.enum(OVERAGES),
  overageUnits: count,
  resetAtMs: count.meta({ description: "The end of the tenant's current billing period (ms since the epoch)" }),
  resetSeconds: count,
  periodStart: z.string(),
  periodEnd: z.string(),
  periodLabel: z.string().meta({ description: "The period's counter label: 2026-03 (UTC calendar) or 2026-03-15@America/Los_Angeles" }),
  thresholds: z.array(z.number()),
  thresholdsCrossed: z.array(z.number()),
});

const tenantUsageLimitSchema = z.object({
  name: z.string(),
  operation: z.string(),
  scope: z.enum(SCOPES),
  algorithm: z.enum(ALGORITHMS),
  limit: count,
  windowSeconds: count,
  used: count.nullable().meta({ description: "Tenant-wide limits: limit − remaining; null where remaining is" }),
  remaining: count.nullable().meta({ description: "Tenant-wide limits: what is left now; null for per-key, per-address and global limits" }),
  resetAtMs: count.nullable(),
  resetSeconds: count.nullable(),
});

export const tenantUsageAnswerSchema = z.object({
  tenant: z.string(),
  tier: z.string(),
  asOf: z.string(),
  limits: z.array(tenantUsageLimitSchema),
  quotas: z.array(tenantUsageQuotaSchema),
});

export const decisionErrorSchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), field: z.string().nullable().meta({ description: "The failing field, or null when the error is about no single field" }) }),
});

/** A component of the document: zod's own metadata id (zod-to-openapi's `.openapi()` would need its
 * patch applied before every schema was made). */
const named = <S extends z.ZodType>(id: string, schema: S): S => schema.meta({ id }) as S;

const json = <S extends z.ZodType>(schema: S, description: string) => ({ description, content: { "application/json": { schema } } });

function registry(): OpenAPIRegistry {
  const r = new OpenAPIRegistry();
  const bearer = r.registerComponent("securitySchemes", "serviceToken", {
    type: "http",
    scheme: "bearer",
    description: "A service token (`sluice tokens create --kind service`, or SLUICE_SERVICE_TOKENS)",
  });
  const security = [{ [bearer.name]: [] }];
  const CheckRequest = named("CheckRequest", checkSchema);
  const Answer = named("DecisionAnswer", decisionAnswerSchema);
  const ErrorBody = named("Error", decisionErrorSchema);
  const errors = {
    400: json(ErrorBody, "Malformed JSON, a key twice in one object, or an invalid field (named in error.field)"),
    401: json(ErrorBody, "Missing or wrong service token"),
    413: json(ErrorBody, "Body over 64 KiB"),
  };
  r.registerPath({
    method: "post",
    path: "/v1/check",
    operationId: "check",
    summary: "Decide one request, or a batch of at most 100 (each decided on its own)",
    security,
    request: { body: { required: true, content: { "application/json": { schema: z.union([CheckRequest, named("CheckBatch", batchSchema)]) } } } },
    responses: {
      200: json(z.union([Answer, z.object({ results: z.array(Answer) })]), "A decision was made (a denial too: see `status`)"),
      ...errors,
      503: json(ErrorBody, "No policy loaded yet (Retry-After: 1)"),
    },
  });
  r.registerPath({
    method: "post",
    path: "/v1/release",
    operationId: "release",
    summary: "Free a concurrency lease",
    security,
    request: { body: { required: true, content: { "application/json": { schema: releaseSchema } } } },
    responses: { 200: json(z.object({ released: z.boolean() }), "Whether a lease was freed"), ...errors },
  });
  r.registerPath({
    method: "post",
    path: "/v1/settle",
    operationId: "settle",
    summary: "Refund the difference between a reserved and the actual cost, once (idempotent)",
    security,
    request: { body: { required: true, content: { "application/json": { schema: named("SettleRequest", settleSchema) } } } },
    responses: {
      200: json(named("SettleAnswer", settleAnswerSchema), "Settled; the same settle again answers the same with replayed: true"),
      ...errors,
      404: json(ErrorBody, "No such reservation, or older than 10 minutes (unknown_reservation)"),
      409: json(ErrorBody, "Settled before with another actualCost (conflict)"),
      503: json(ErrorBody, "The counter store did not answer: settling again with the same actualCost is safe"),
    },
  });
  const RlsResponse = named("RateLimitResponseJson", rlsJsonResponseSchema);
  r.registerPath({
    method: "post",
    path: "/json",
    operationId: "shouldRateLimitJson",
    summary: "Envoy's rate limit service as protobuf JSON (envoyproxy/ratelimit's /json): a RateLimitRequest in, its RateLimitResponse out",
    security,
    request: { body: { required: true, content: { "application/json": { schema: named("RateLimitRequestJson", rlsJsonRequestSchema) } } } },
    responses: {
      200: json(RlsResponse, "overallCode OK"),
      429: json(RlsResponse, "overallCode OVER_LIMIT"),
      ...errors,
      503: json(ErrorBody, "No policy loaded yet (Retry-After: 1)"),
    },
  });
  const tenantBearer = r.registerComponent("securitySchemes", "tenantToken", {
    type: "http",
    scheme: "bearer",
    description: "A tenant read token (`sluice tokens create --kind tenant --tenant SLUG`): reads that tenant's usage, makes no decisions",
  });
  r.registerPath({
    method: "get",
    path: "/v1/usage",
    operationId: "usage",
    summary: "The token's tenant's limits and quotas: limit, used, remaining, reset and billing period, from the counters that decide",
    security: [{ [tenantBearer.name]: [] }],
    responses: {
      200: json(named("TenantUsage", tenantUsageAnswerSchema), "The tenant's usage (nothing of any other tenant)"),
      401: json(ErrorBody, "Missing, wrong or revoked tenant token"),
      403: json(ErrorBody, "A service token: it reads no tenant's usage"),
      404: json(ErrorBody, "The token's tenant is not in the policy in force"),
      503: json(ErrorBody, "No policy loaded yet, the counters could not be read in time, or single-node mode"),
    },
  });
  const gateway = r.registerComponent("securitySchemes", "gatewayToken", { type: "apiKey", in: "header", name: "X-Sluice-Token", description: "A service token, sent by the gateway" });
  const forwardHeaders = z.object({
    "x-api-key": z.string().optional().meta({ description: "The end client's API key (or Authorization: Bearer <key>)" }),
    "x-original-method": z.string().optional().meta({ description: "The client's method, as nginx sets it; with X-Original-URI it wins over X-Forwarded-*" }),
    "x-original-uri": z.string().optional().meta({ description: "The client's URI, as nginx sets it" }),
    "x-forwarded-method": z.string().optional().meta({ description: "The client's method (Traefik), read only when X-Original-* are absent" }),
    "x-forwarded-uri": z.string().optional().meta({ description: "The client's URI (Traefik), read only when X-Original-* are absent" }),
    "x-forwarded-for": z.string().optional().meta({ description: "The client's address when the request has no X-Real-IP (the default SLUICE_CLIENT_ADDRESS_HEADER, x-real-ip,x-forwarded-for) or with SLUICE_CLIENT_ADDRESS_HEADER=x-forwarded-for: the entry SLUICE_TRUSTED_PROXY_HOPS places from the right, canonicalised; missing or unparseable: the one shared subject \"unknown\"" }),
    "x-real-ip": z.string().optional().meta({ description: "The client's address, one address, when present (the default SLUICE_CLIENT_ADDRESS_HEADER, x-real-ip,x-forwarded-for, or x-real-ip); ignored with SLUICE_CLIENT_ADDRESS_HEADER=x-forwarded-for" }),
  });
  const decided = (what: string) => ({
    description: `${what}; the decision's RateLimit and Retry-After headers, X-Sluice-Reason, X-Sluice-Tenant, X-Sluice-Delay-Ms and X-Sluice-Lease come with it`,
    content: { "application/json": { schema: Answer } },
  });
  for (const method of ["get", "post"] as const) {
    r.registerPath({
      method,
      path: "/v1/forward-auth",
      operationId: `forwardAuth${method === "get" ? "Get" : "Post"}`,
      summary: "For nginx auth_request, Traefik ForwardAuth, Envoy ext_authz: any method; the request is read from the forwarding headers (or, for Envoy, /v1/forward-auth/<the client's path>)",
      security: [{ [gateway.name]: [] }],
      request: { headers: forwardHeaders },
      responses: {
        200: decided("Allowed"),
        400: json(ErrorBody, "No operation in the forwarding headers, or a field too long"),
        401: { description: "No or a wrong X-Sluice-Token (an error body), or an unknown API key (a decision)", content: { "application/json": { schema: z.union([ErrorBody, Answer]) } } },
        403: decided("The tenant is suspended"),
        429: decided("Rate limited"),
        503: { description: "Fail-closed (a decision), or no policy loaded yet (an error body)", content: { "application/json": { schema: z.union([Answer, ErrorBody]) } } },
      },
    });
  }
  r.registerPath({
    method: "get",
    path: "/healthz",
    operationId: "healthz",
    summary: "The process is up",
    responses: {
      200: json(z.object({ ok: z.literal(true), region: z.string().optional().meta({ description: "SLUICE_REGION, when set (docs/regions.md)" }) }), "Up"),
    },
  });
  r.registerPath({
    method: "get",
    path: "/readyz",
    operationId: "readyz",
    summary: "A policy is loaded and Redis answers; otherwise 503 saying what is missing",
    responses: {
      200: json(z.record(z.string(), z.unknown()), "Ready"),
      503: json(z.record(z.string(), z.unknown()), "Not ready (the body says what is missing)"),
    },
  });
  r.registerPath({
    method: "get",
    path: "/metrics",
    operationId: "metrics",
    summary: "Prometheus metrics",
    responses: { 200: { description: "Prometheus text exposition format", content: { "text/plain": { schema: z.string() } } } },
  });
  return r;
}

let cached: Record<string, unknown> | null = null;

/** The decision API's OpenAPI 3.1 document (built once per process). */
export function decisionOpenApi(): Record<string, unknown> {
  cached ??= new OpenApiGeneratorV31(registry().definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Sluice decision API",
      version: "1",
      description: "Asked by gateways and services on every request (docs/decision-api.md). Forward-auth (ANY /v1/forward-auth) reads headers, not a body, and answers the decision's status.",
    },
  }) as unknown as Record<string, unknown>;
  return cached;
}

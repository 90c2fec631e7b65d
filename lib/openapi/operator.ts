/**
 * `sluice openapi`: the operator's own API contract with its rate limits in it (docs/decision-api.md,
 * "OpenAPI documents"). Into the operator's OpenAPI document — or a new one whose paths come from
 * the policy's match patterns — every operation the policy limits gets:
 *
 *  - a `429` response with an `application/problem+json` body (what the middleware of
 *    `sluice/client` answers: lib/client/problem.ts) and the `RateLimit`, `RateLimit-Policy` and
 *    `Retry-After` headers;
 *  - the `RateLimit` and `RateLimit-Policy` headers on its 2xx responses;
 *  - a `503` when its failure mode is `closed` (the rate limiter unavailable);
 *  - `x-sluice-ratelimit`: the policy operation it resolves to, its cost and failure mode, and per
 *    tier the limits and quotas that apply (plus global caps).
 *
 * Nothing of the operator's document is dropped: existing responses, headers and content are kept,
 * and only what is missing is added. Components are added under `Sluice…` names.
 */
import type { CompiledLimit, CompiledPolicy, CompiledQuota } from "../policy/compiled";
import { formatDurationMs } from "../policy/duration";
import { resolveOperation } from "../policy/match";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
/** What a `*` method in a match pattern becomes in a document made from the policy alone. */
const ANY_METHOD = ["get", "post", "put", "patch", "delete"] as const;

export class SpecError extends Error {}

export interface RateLimitExtension {
  /** The policy operation the path and method resolve to (`*` when no pattern matches them). */
  operation: string;
  policyVersion: number;
  cost: number;
  failureMode: string;
  tiers: Record<string, { limits: LimitEntry[]; quotas: QuotaEntry[] }>;
  globalCaps: { limit: number; window: string; share: string }[];
}

interface LimitEntry {
  name: string;
  scope: string;
  algorithm: string;
  limit: number;
  /** For windowed algorithms; a concurrency limit has `leaseTtl` instead. */
  window?: string;
  leaseTtl?: string;
  burst?: number;
  mode: string;
  maxDelay?: string;
}

interface QuotaEntry {
  period: string;
  limit: number;
  overage: string;
}

const applies = (limitOperation: string, operation: string) => limitOperation === "*" || limitOperation === operation;

function limitEntry(l: CompiledLimit): LimitEntry {
  const e: LimitEntry = { name: l.name, scope: l.scope, algorithm: l.algorithm, limit: l.limit, mode: l.mode };
  if (l.algorithm === "concurrency") e.leaseTtl = formatDurationMs(l.leaseTtlMs);
  else e.window = formatDurationMs(l.windowMs);
  if ((l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket") && l.burst > 0) e.burst = l.burst;
  if (l.mode === "delay") e.maxDelay = formatDurationMs(l.maxDelayMs);
  return e;
}

const quotaEntry = (q: CompiledQuota): QuotaEntry => ({ period: q.period, limit: q.limit, overage: q.overage });

/** What the policy says about one operation (null when nothing there can deny it). */
export function rateLimitOf(policy: CompiledPolicy, request: string): RateLimitExtension | null {
  const op = resolveOperation(policy, request);
  const operation = op?.name ?? "*";
  const ext: RateLimitExtension = {
    operation,
    policyVersion: policy.version,
    cost: op?.cost ?? 1,
    failureMode: op?.failureMode ?? policy.defaults.failureMode,
    tiers: {},
    globalCaps: policy.globalCaps
      .filter((g) => applies(g.operation, operation))
      .map((g) => ({ limit: g.limit, window: formatDurationMs(g.windowMs), share: g.share })),
  };
  let denies = ext.globalCaps.length > 0;
  // Tiers by weight (free, pro, enterprise), then name: the same order every run.
  const tiers = Object.values(policy.tiers).sort((a, b) => a.weight - b.weight || a.name.localeCompare(b.name));
  for (const tier of tiers) {
    const limits = tier.limits.filter((l) => applies(l.operation, operation));
    const quotas = tier.quotas.filter((q) => applies(q.operation, operation));
    if (limits.length === 0 && quotas.length === 0) continue;
    ext.tiers[tier.name] = { limits: limits.map(limitEntry), quotas: quotas.map(quotaEntry) };
    // Shadow limits never deny; quotas with overage billed do not either.
    if (limits.some((l) => l.mode !== "shadow") || quotas.some((q) => q.overage === "block")) denies = true;
  }
  return denies ? ext : null;
}

const HEADERS: Record<string, Json> = {
  SluiceRateLimit: {
    description: 'The most restrictive limit now (IETF RateLimit header fields): `"<name>";r=<remaining>;t=<seconds until reset>`',
    schema: { type: "string", example: '"free-api_key";r=0;t=17' },
  },
  SluiceRateLimitPolicy: {
    description: 'That limit\'s quota and window: `"<name>";q=<limit>;w=<window seconds>`',
    schema: { type: "string", example: '"free-api_key";q=100;w=60' },
  },
  SluiceRetryAfter: {
    description: "Seconds after which the same request passes if nothing else consumes meanwhile (absent when it never can, e.g. a cost above the limit)",
    schema: { type: "integer", minimum: 0 },
  },
};

const PROBLEM: Json = {
  type: "object",
  description: "RFC 9457 problem details, as the sluice/client middleware answers a denied request",
  properties: {
    type: { type: "string", enum: ["about:blank"] },
    title: { type: "string" },
    status: { type: "integer" },
    detail: { type: "string" },
    reason: { type: "string", enum: ["rate_limited", "quota_exhausted", "concurrency_limited", "cost_exceeds_limit", "store_unavailable"] },
    retryAfterSeconds: { type: "integer", minimum: 1 },
  },
  required: ["type", "title", "status", "detail", "reason"],
};

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });
const problemContent = () => ({ "application/problem+json": { schema: { $ref: "#/components/schemas/SluiceRateLimitProblem" } } });

/** Adds what is missing to one response (never replaces what is there). */
function ensureResponse(responses: Json, code: string, description: string, headers: string[], withProblem: boolean): void {
  const r = isObject(responses[code]) ? (responses[code] as Json) : (responses[code] = { description });
  if (typeof r.$ref === "string") return; // a shared response of theirs: left as it is
  if (typeof r.description !== "string") r.description = description;
  const h = isObject(r.headers) ? r.headers : (r.headers = {});
  const names: Record<string, string> = { SluiceRateLimit: "RateLimit", SluiceRateLimitPolicy: "RateLimit-Policy", SluiceRetryAfter: "Retry-After" };
  for (const component of headers) {
    const name = names[component]!;
    if (!Object.keys(h).some((k) => k.toLowerCase() === name.toLowerCase())) h[name] = headerRef(component);
  }
  if (withProblem) {
    const content = isObject(r.content) ? r.content : (r.content = {});
    if (!("application/problem+json" in content)) Object.assign(content, problemContent());
  }
}

function annotate(operation: Json, ext: RateLimitExtension): void {
  const responses = isObject(operation.responses) ? operation.responses : (operation.responses = {});
  for (const code of Object.keys(responses)) {
    if (/^2(\d\d|XX)$/.test(code)) ensureResponse(responses, code, "OK", ["SluiceRateLimit", "SluiceRateLimitPolicy"], false);
  }
  if (Object.keys(responses).every((c) => !/^2/.test(c))) ensureResponse(responses, "200", "OK", ["SluiceRateLimit", "SluiceRateLimitPolicy"], false);
  ensureResponse(responses, "429", "Too Many Requests: a rate limit, quota or concurrency limit denied the request", ["SluiceRateLimit", "SluiceRateLimitPolicy", "SluiceRetryAfter"], true);
  if (ext.failureMode === "closed") ensureResponse(responses, "503", "Service Unavailable: the rate limiter could not be asked and this operation fails closed", ["SluiceRetryAfter"], true);
  operation["x-sluice-ratelimit"] = ext;
}

function addComponents(doc: Json): void {
  const components = isObject(doc.components) ? doc.components : (doc.components = {});
  const headers = isObject(components.headers) ? components.headers : (components.headers = {});
  for (const [name, h] of Object.entries(HEADERS)) headers[name] ??= h;
  const schemas = isObject(components.schemas) ? components.schemas : (components.schemas = {});
  schemas.SluiceRateLimitProblem ??= PROBLEM;
}

/** `/v1/orders/{id}` → a concrete path the policy's patterns can match (`/v1/orders/_`). */
const samplePath = (route: string) => route.replace(/\{[^}]+\}/g, "_");

/** Throws SpecError unless `spec` looks like an OpenAPI 3.x document (checked before anything else is read). */
export function assertOpenApi3(spec: unknown): asserts spec is Json {
  if (!isObject(spec)) throw new SpecError("expected an OpenAPI document (an object)");
  if (typeof spec.openapi !== "string" || !/^3\.\d+\.\d+$/.test(spec.openapi)) {
    throw new SpecError(`openapi: expected an OpenAPI 3.x version like "3.1.0", got ${JSON.stringify(spec.openapi ?? null)}${"swagger" in spec ? " (Swagger 2.0 is not supported)" : ""}`);
  }
  if (spec.paths !== undefined && !isObject(spec.paths)) throw new SpecError("paths: expected an object");
}

/**
 * The operator's document with the rate limits of `policy` written into it (a deep copy; the input
 * is not changed). Throws SpecError when it is not an OpenAPI 3.x document.
 */
export function mergeRateLimits(policy: CompiledPolicy, spec: unknown): { doc: Json; limited: number } {
  assertOpenApi3(spec);
  const doc = structuredClone(spec);
  const paths = (doc.paths ?? {}) as Json;
  let limited = 0;
  for (const [route, item] of Object.entries(paths)) {
    if (!isObject(item)) throw new SpecError(`paths.${route}: expected a path item`);
    if (!route.startsWith("/")) throw new SpecError(`paths.${route}: a path starts with /`);
    for (const method of METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      if (!isObject(op)) throw new SpecError(`paths.${route}.${method}: expected an operation`);
      const ext = rateLimitOf(policy, `${method.toUpperCase()} ${samplePath(route)}`);
      if (!ext) continue;
      annotate(op, ext);
      limited++;
    }
  }
  if (limited > 0) addComponents(doc);
  return { doc, limited };
}

/** A match pattern's path as an OpenAPI path template, with its parameters. */
function templateOf(pattern: string): { route: string; params: Json[] } {
  const params: Json[] = [];
  const segments = pattern.split("/").filter((s) => s !== "");
  const out = segments.map((s, i) => {
    if (s !== "*" && s !== "**") return s;
    const base = (segments[i - 1] ?? "path").replace(/[^A-Za-z0-9_]/g, "_");
    let name = s === "**" ? "rest" : `${base}_id`;
    while (params.some((p) => p.name === name)) name = `${name}_`;
    params.push({
      name,
      in: "path",
      required: true,
      description: s === "**" ? "the rest of the path (one or more segments)" : "one path segment",
      schema: { type: "string" },
    });
    return `{${name}}`;
  });
  return { route: `/${out.join("/")}`, params };
}

/** A new OpenAPI 3.1 document from the policy alone: one path per match pattern, then merged. */
export function documentFromPolicy(policy: CompiledPolicy): Json {
  const paths: Json = {};
  for (const op of Object.values(policy.operations)) {
    for (const pattern of op.match) {
      const space = pattern.indexOf(" ");
      if (space === -1) continue;
      const method = pattern.slice(0, space).toLowerCase();
      const { route, params } = templateOf(pattern.slice(space + 1).trim());
      const item = (paths[route] ??= {}) as Json;
      for (const m of method === "*" ? ANY_METHOD : [method]) {
        if (!(METHODS as readonly string[]).includes(m) || item[m] !== undefined) continue;
        item[m] = {
          operationId: `${op.name}_${m}_${route.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}`,
          summary: `${op.name} (${pattern})`,
          tags: [op.name],
          ...(params.length > 0 ? { parameters: params } : {}),
          responses: { 200: { description: "OK" } },
        };
      }
    }
  }
  const spec: Json = {
    openapi: "3.1.0",
    info: { title: "API rate limits", version: String(policy.version), description: `Rate limits of policy v${policy.version}, written by sluice openapi from its operations' match patterns.` },
    paths,
  };
  return mergeRateLimits(policy, spec).doc;
}

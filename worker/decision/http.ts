/**
 * The decision server's HTTP adapter (docs/decision-api.md): POST /v1/check (single or batch), ANY
 * /v1/forward-auth, POST /v1/release, POST /v1/settle (./settle.ts), GET /v1/usage (./usage.ts), POST /json
 * (Envoy's rate limit service as protobuf JSON, envoyproxy/ratelimit's `/json`: ./rls-answer.ts), GET /openapi.json
 * (lib/openapi/decision.ts), GET /healthz, /readyz, /metrics. It authenticates, parses
 * (lib/decision/request.ts), calls `engine.decide` and writes the answer; the decision itself is
 * the engine's.
 *
 * It runs on the HTTP server of lib/net/http-server.ts: by default lib/net/http1.ts, a small strict
 * HTTP/1.1 server on node:net, since on a path that answers a few hundred bytes per request
 * node:http's own per-request work cost about as much CPU as the decision (docs/benchmarks.md);
 * node:http with SLUICE_HTTP_SERVER=node. Hardening is that layer's and this file's: bodies over
 * the limit get 413 without being read; a request is routed and its service token checked from its
 * head, before its body is read; bad JSON, a duplicate key or a bad field get 400 naming it
 * (./json-body.ts); header and request timeouts cut slow clients; nothing a client sends reaches a
 * stack trace (every handler is wrapped, errors answer a fixed JSON body); `drain()` stops
 * accepting and waits for in-flight requests.
 */
import { randomUUID } from "node:crypto";
import type net from "node:net";
import { plainAnswer } from "../../lib/decision/answer";
import { decisionRequest, NotReadyError, type DecisionEngine } from "../../lib/decision/engine";
import type { DecisionMetrics } from "../../lib/decision/metrics";
import { errorBody } from "../../lib/errors";
import { errorMessage, type Logger } from "../../lib/log";
import { clientAddressFromHeaders, DEFAULT_CLIENT_ADDRESS_RULES, type ClientAddressRules } from "../../lib/decision/client-address";
import { MAX_FIELD_CHARS, parseCheckBody, parseReleaseBody, type FieldError } from "../../lib/decision/request";
import { ForgedLeaseError } from "../../lib/store/lease-id";
import { bearerToken } from "../../lib/auth/bearer";
import { createHttpServer } from "../../lib/net/create-http-server";
import { httpLimits, type HttpClientError, type HttpExchange, type HttpHandler, type HttpLimits, type HttpServerKind } from "../../lib/net/http-server";
import type { CompiledPolicy } from "../../lib/policy/compiled";
import type { ServiceTokens } from "./service-tokens";
import { parseJsonBody } from "./json-body";
import { settleRoute } from "./settle";
import type { RlsResult } from "./rls-answer";
import { parseRateLimitRequestJson, rateLimitResponseJson } from "../../lib/rls/json";
import type { RlsRequestMessage } from "../../lib/rls/messages";
import { usageRoute, type UsageRouteDeps } from "./usage";
import { decisionOpenApi } from "../../lib/openapi/decision";

/** Also the prefix of Envoy ext_authz's requests: `/v1/forward-auth/<the client's path>`. */
const FORWARD_AUTH_PATH = "/v1/forward-auth";

export interface DecisionHttpDeps {
  engine: DecisionEngine;
  tokens: ServiceTokens;
  /** The document in force (forward-auth answers a missing key without the engine). */
  currentPolicy: () => CompiledPolicy | null;
  /** The /readyz answer. */
  readiness: () => { ready: boolean; body: Record<string, unknown> };
  /** Fields of the /healthz answer besides `ok` (the region, SLUICE_REGION). */
  health?: Readonly<Record<string, string>>;
  metrics: DecisionMetrics;
  /** The /metrics text when this process is one of several (the aggregate of all); default this registry's. */
  metricsText?: () => Promise<string>;
  /** For what goes wrong (nothing is written per request). */
  logger: Logger;
  /** Forward-auth: which forwarding header names the client, and the trusted proxies (default: X-Real-IP when present else X-Forwarded-For, no hops). */
  clientAddressRules?: ClientAddressRules;
  /** Which HTTP server (SLUICE_HTTP_SERVER; default `http1`, the hand-written one). */
  httpServer?: HttpServerKind;
  /** Its limits (SLUICE_HTTP_*; default DEFAULT_HTTP_LIMITS). */
  httpLimits?: Partial<HttpLimits>;
  /** ShouldRateLimit, for POST /json (./rls-answer.ts; absent: 404). */
  rls?: (request: RlsRequestMessage) => Promise<RlsResult>;
  /** GET /v1/usage (./usage.ts); absent: 404. */
  usage?: UsageRouteDeps;
}

export interface DecisionHttp {
  server: net.Server;
  /** The HTTP server in use. */
  kind: HttpServerKind;
  /** Stops accepting, lets in-flight requests finish (at most 10 s), then closes every connection. */
  drain(): Promise<void>;
}

const JSON_HEADERS = ["Content-Type", "application/json", "Cache-Control", "no-store"] as const;
const JSON_LINES = "Content-Type: application/json\r\nCache-Control: no-store\r\n";

/** A JSON answer; `headers` as a flat [name, value, …] list or a record. */
function json(ex: HttpExchange, status: number, body: unknown, headers?: Readonly<Record<string, string>>, close = false): void {
  const list: string[] = [...JSON_HEADERS];
  if (headers) for (const name in headers) list.push(name, headers[name]!);
  ex.send(status, list, JSON.stringify(body), close);
}

function invalid(ex: HttpExchange, e: FieldError): void {
  json(ex, 400, errorBody("invalid_request", e.message, { field: e.field }));
}

/** The caller's X-Request-Id when it is a sane token, else a fresh one. */
function requestId(ex: HttpExchange): string {
  const given = ex.header("x-request-id");
  return given !== undefined && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : randomUUID();
}

function notReady(ex: HttpExchange): void {
  json(ex, 503, errorBody("not_ready", "no policy loaded yet"), { "Retry-After": "1" });
}

/** What this server answers to requests its HTTP layer refuses (the same error envelope as every other answer; field null). */
function clientErrors(limits: HttpLimits): (kind: HttpClientError) => { headers: readonly string[]; body: string } {
  const bodies: Record<HttpClientError, string> = {
    headers_too_large: JSON.stringify(errorBody("invalid_request", `request headers too large (over ${limits.maxHeaderBytes} bytes or ${limits.maxHeaders} lines)`)),
    body_too_large: JSON.stringify(errorBody("payload_too_large", `body over ${limits.maxBodyBytes} bytes`)),
    timeout: JSON.stringify(errorBody("invalid_request", "request not received in time")),
    expectation_failed: JSON.stringify(errorBody("invalid_request", "Expect: only 100-continue is supported")),
    malformed: JSON.stringify(errorBody("invalid_request", "malformed HTTP")),
  };
  return (kind) => ({ headers: JSON_HEADERS, body: bodies[kind] });
}

interface Route {
  /** null: any method. */
  methods: string[] | null;
  /** Checks the service token from the head (Authorization: Bearer), before the body is read. */
  serviceToken: boolean;
  handle: HttpHandler;
}

export function createDecisionHttp(deps: DecisionHttpDeps): DecisionHttp {
  const { engine, tokens, currentPolicy, metrics, logger } = deps;
  const addressRules = deps.clientAddressRules ?? DEFAULT_CLIENT_ADDRESS_RULES;

  async function handleCheck(ex: HttpExchange): Promise<void> {
    const body = parseJsonBody(ex.body);
    if (!body.ok) return invalid(ex, body.error);
    const parsed = parseCheckBody(body.value);
    if (!parsed.ok) return invalid(ex, parsed.error);
    // Server-Timing tells the caller how long the decision itself took (store call included).
    const started = performance.now();
    const answer = parsed.batch ? { results: await Promise.all(parsed.requests.map((r) => engine.decide(r))) } : await engine.decide(parsed.request);
    // The header lines are constants and a number: written as they are (HttpExchange.sendLines).
    ex.sendLines(200, `${JSON_LINES}Server-Timing: decide;dur=${(performance.now() - started).toFixed(2)}\r\n`, JSON.stringify(answer));
  }

  async function handleForwardAuth(ex: HttpExchange): Promise<void> {
    if (!tokens.accepts(ex.header("x-sluice-token"))) {
      json(ex, 401, errorBody("unauthorized", "missing or wrong X-Sluice-Token"));
      return;
    }
    // nginx sets X-Original-*, and passes the client's own X-Forwarded-* through: when the gateway's
    // pair is there, the other is the client's word and is ignored (examples/gateways clear both).
    const original = ex.header("x-original-method") !== undefined || ex.header("x-original-uri") !== undefined;
    let method = original ? ex.header("x-original-method") : ex.header("x-forwarded-method");
    let uri = original ? ex.header("x-original-uri") : ex.header("x-forwarded-uri");
    // Envoy's ext_authz (HTTP service) sends none of those: it repeats the client's method and
    // appends the client's path to its `path_prefix`, so `/v1/forward-auth/v1/orders/42?x=1` asks
    // about `GET /v1/orders/42?x=1` (examples/gateways/envoy.yaml).
    const rest = ex.url.slice(FORWARD_AUTH_PATH.length);
    if (!method && !uri && rest.startsWith("/")) {
      method = ex.method;
      uri = rest;
    }
    if (!method || !uri) {
      return invalid(ex, {
        field: "X-Forwarded-Uri",
        message: "X-Original-Method and X-Original-URI (or X-Forwarded-Method and X-Forwarded-Uri) are required, or the client's path after /v1/forward-auth",
      });
    }
    const operation = `${method} ${uri}`;
    if (operation.length > MAX_FIELD_CHARS) return invalid(ex, { field: "X-Forwarded-Uri", message: "operation: at most 512 characters" });
    const apiKey = ex.header("x-api-key") ?? bearerToken(ex.header("authorization")) ?? ex.header("authorization");
    // Never absent: a missing or unparseable address is the one shared `unknown` subject.
    const ip = clientAddressFromHeaders((name) => ex.header(name), addressRules);
    if (apiKey === undefined || apiKey === "") {
      const doc = currentPolicy();
      if (!doc) return notReady(ex);
      const answer = plainAnswer({ tenant: null, tier: null, operation: null, policyVersion: doc.version }, 401, "unknown_key");
      return json(ex, 401, answer);
    }
    if (apiKey.length > MAX_FIELD_CHARS) return invalid(ex, { field: "X-Api-Key", message: "key: at most 512 characters" });
    const request = decisionRequest({ key: apiKey, operation, ip });
    const answer = await engine.decide(request);
    const headers: Record<string, string> = { ...answer.headers, "X-Sluice-Reason": answer.reason };
    if (answer.tenant) headers["X-Sluice-Tenant"] = answer.tenant;
    if (answer.delayMs > 0) headers["X-Sluice-Delay-Ms"] = String(answer.delayMs);
    if (answer.leaseId) headers["X-Sluice-Lease"] = answer.leaseId;
    json(ex, answer.status, answer, headers);
  }

  /** A service-token POST's JSON body, or undefined once the error is answered. */
  function jsonBody(ex: HttpExchange): { value: unknown } | undefined {
    const body = parseJsonBody(ex.body);
    if (body.ok) return body;
    invalid(ex, body.error);
    return undefined;
  }

  async function handleRelease(ex: HttpExchange): Promise<void> {
    const body = jsonBody(ex);
    if (!body) return;
    const parsed = parseReleaseBody(body.value);
    if (!parsed.ok) return invalid(ex, parsed.error);
    const released = await engine.release(parsed.leaseId).catch((error: unknown) => {
      if (error instanceof ForgedLeaseError) return error;
      throw error;
    });
    if (released instanceof ForgedLeaseError) return invalid(ex, { field: "leaseId", message: `leaseId: ${released.message}` });
    json(ex, 200, { released });
  }

  async function handleSettle(ex: HttpExchange): Promise<void> {
    const body = jsonBody(ex);
    if (!body) return;
    const out = await settleRoute(engine, body.value);
    json(ex, out.status, out.body, out.headers);
  }

  /** envoyproxy/ratelimit's `/json`: 200 with the response, 429 when its overallCode is OVER_LIMIT. */
  async function handleRlsJson(ex: HttpExchange, rls: NonNullable<DecisionHttpDeps["rls"]>): Promise<void> {
    const body = jsonBody(ex);
    if (!body) return;
    const parsed = parseRateLimitRequestJson(body.value);
    if (!parsed.ok) return invalid(ex, parsed.error);
    const result = await rls(parsed.request);
    if (!result.ok) {
      if (result.kind === "not_ready") return notReady(ex);
      return json(ex, 400, errorBody("invalid_request", result.message, { field: result.field }));
    }
    json(ex, result.response.overall_code === "OVER_LIMIT" ? 429 : 200, rateLimitResponseJson(result.response));
  }

  const rls = deps.rls;
  /** A tenant read token's own usage (./usage.ts checks the token itself: it is no service token). */
  async function handleUsage(ex: HttpExchange): Promise<void> {
    const out = await usageRoute(deps.usage!, ex.header("authorization"));
    json(ex, out.status, out.body, out.status === 200 ? undefined : out.headers);
  }

  const routes: Record<string, Route> = {
    ...(rls ? { "/json": { methods: ["POST"], serviceToken: true, handle: (ex: HttpExchange) => handleRlsJson(ex, rls) } } : {}),
    "/v1/check": { methods: ["POST"], serviceToken: true, handle: handleCheck },
    [FORWARD_AUTH_PATH]: { methods: null, serviceToken: false, handle: handleForwardAuth },
    "/v1/release": { methods: ["POST"], serviceToken: true, handle: handleRelease },
    "/v1/settle": { methods: ["POST"], serviceToken: true, handle: handleSettle },
    "/healthz": { methods: ["GET", "HEAD"], serviceToken: false, handle: (ex) => json(ex, 200, { ok: true, ...deps.health }) },
    ...(deps.usage ? { "/v1/usage": { methods: ["GET"], serviceToken: false, handle: handleUsage } } : {}),
    "/openapi.json": { methods: ["GET", "HEAD"], serviceToken: false, handle: (ex) => json(ex, 200, decisionOpenApi()) },
    "/readyz": {
      methods: ["GET", "HEAD"],
      serviceToken: false,
      handle: (ex) => {
        const { ready, body } = deps.readiness();
        json(ex, ready ? 200 : 503, body);
      },
    },
    "/metrics": {
      methods: ["GET"],
      serviceToken: false,
      handle: async (ex) => {
        const text = await (deps.metricsText ?? (() => metrics.registry.metrics()))();
        ex.send(200, ["Content-Type", metrics.registry.contentType], text);
      },
    },
  };

  const checkRoute = routes["/v1/check"]!;

  /** From a request's head: its handler, or the answer now (404, 405, 401) without reading the body. */
  function route(ex: HttpExchange): HttpHandler | null {
    const path = ex.path;
    // The decision path first, by comparing the path: a lookup by a request's own string would
    // internalize it first.
    const r = path === "/v1/check" ? checkRoute : Object.hasOwn(routes, path) ? routes[path]! : path.startsWith(`${FORWARD_AUTH_PATH}/`) ? routes[FORWARD_AUTH_PATH]! : undefined;
    if (!r) {
      json(ex, 404, errorBody("not_found", "no such endpoint"));
      return null;
    }
    if (r.methods && !r.methods.includes(ex.method)) {
      json(ex, 405, errorBody("method_not_allowed", `use ${r.methods.join(", ")}`), { Allow: r.methods.join(", ") });
      return null;
    }
    if (r.serviceToken && !tokens.accepts(bearerToken(ex.header("authorization")))) {
      json(ex, 401, errorBody("unauthorized", "missing or wrong service token"), { "WWW-Authenticate": "Bearer" });
      return null;
    }
    return r.handle;
  }

  function handlerError(ex: HttpExchange, error: unknown): void {
    if (ex.answered) return;
    if (error instanceof NotReadyError) return notReady(ex);
    // The caller's request id (gateways send one) or a new one, in the line and in the answer.
    const reqId = requestId(ex);
    logger.error({ reqId, path: ex.path, method: ex.method, err: errorMessage(error) }, "internal error");
    json(ex, 500, errorBody("internal", "internal error"), { "X-Request-Id": reqId });
  }

  const limits = httpLimits(deps.httpLimits ?? {});
  const http = createHttpServer(deps.httpServer ?? "http1", { ...limits, route, clientError: clientErrors(limits), handlerError });
  return { server: http.server, kind: http.kind, drain: () => http.drain(10_000) };
}

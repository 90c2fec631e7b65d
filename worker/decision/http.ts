/**
 * The decision server's HTTP adapter (docs/decision-api.md): POST /v1/check (single or batch), ANY
 * /v1/forward-auth, POST /v1/release, POST /v1/settle (./settle.ts), GET /openapi.json (lib/openapi/decision.ts), GET /healthz, /readyz, /metrics, on plain node:http. It
 * authenticates, parses (lib/decision/request.ts), calls `engine.decide` and writes the answer;
 * the decision itself is the engine's.
 *
 * Hardening: bodies over 64 KiB get 413 without being read further; bad JSON or fields get 400
 * naming the field; header and request timeouts cut slow clients; nothing a client sends reaches
 * a stack trace (every handler is wrapped, errors answer a fixed JSON body); `drain()` stops
 * accepting and waits for in-flight requests.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import { plainAnswer } from "../../lib/decision/answer";
import { NotReadyError, type DecisionEngine, type DecisionRequest } from "../../lib/decision/engine";
import type { DecisionMetrics } from "../../lib/decision/metrics";
import { errorBody } from "../../lib/errors";
import { errorMessage, type Logger } from "../../lib/log";
import { clientAddressFromHeaders, DEFAULT_CLIENT_ADDRESS_RULES, type ClientAddressRules } from "../../lib/decision/client-address";
import { MAX_FIELD_CHARS, parseCheckBody, parseReleaseBody, type FieldError } from "../../lib/decision/request";
import type { CompiledPolicy } from "../../lib/policy/compiled";
import type { ServiceTokens } from "./service-tokens";
import { settleRoute } from "./settle";
import { decisionOpenApi } from "../../lib/openapi/decision";

export const MAX_BODY_BYTES = 64 * 1024;

/** Also the prefix of Envoy ext_authz's requests: `/v1/forward-auth/<the client's path>`. */
const FORWARD_AUTH_PATH = "/v1/forward-auth";

export interface DecisionHttpDeps {
  engine: DecisionEngine;
  tokens: ServiceTokens;
  /** The document in force (forward-auth answers a missing key without the engine). */
  currentPolicy: () => CompiledPolicy | null;
  /** The /readyz answer. */
  readiness: () => { ready: boolean; body: Record<string, unknown> };
  metrics: DecisionMetrics;
  /** The /metrics text when this process is one of several (the aggregate of all); default this registry's. */
  metricsText?: () => Promise<string>;
  /** For what goes wrong (nothing is written per request). */
  logger: Logger;
  /** Forward-auth: which forwarding header names the client, and the trusted proxies (default: X-Real-IP when present else X-Forwarded-For, no hops). */
  clientAddressRules?: ClientAddressRules;
}

export interface DecisionHttp {
  server: http.Server;
  /** Stops accepting, lets in-flight requests finish (at most 10 s), then closes every connection. */
  drain(): Promise<void>;
}

function json(res: http.ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  // A flat [name, value, …] list: node writes it as is, without merging an object per response.
  const list: string[] = ["Content-Type", "application/json", "Content-Length", String(Buffer.byteLength(text)), "Cache-Control", "no-store"];
  if (headers) for (const name in headers) list.push(name, headers[name]!);
  res.writeHead(status, list);
  res.end(text);
}


function invalid(res: http.ServerResponse, e: FieldError): void {
  json(res, 400, errorBody("invalid_request", e.message, { field: e.field }));
}

class BodyTooLarge extends Error {}

/** Reads the body up to MAX_BODY_BYTES; rejects with BodyTooLarge past it. */
function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > MAX_BODY_BYTES) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        done = true;
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!done) {
        done = true;
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
      }
    });
    req.on("error", (e) => {
      if (!done) {
        done = true;
        reject(e);
      }
    });
  });
}

function parseJson(buf: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(buf.toString("utf8")) as unknown };
  } catch {
    return { ok: false };
  }
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const visibleAscii = (code: number) => code > 32 && code < 127;

function bearer(value: string | undefined): string | undefined {
  if (!value) return undefined;
  // The usual spelling without a regex; anything else (other case, tabs, padding) takes the regex.
  if (value.startsWith("Bearer ") && visibleAscii(value.charCodeAt(7)) && visibleAscii(value.charCodeAt(value.length - 1))) return value.slice(7);
  const m = /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? m[1]!.trim() : undefined;
}

/** The caller's X-Request-Id when it is a sane token, else a fresh one. */
function requestId(req: http.IncomingMessage): string {
  const given = header(req, "x-request-id");
  return given !== undefined && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : randomUUID();
}

function notReady(res: http.ServerResponse): void {
  json(res, 503, errorBody("not_ready", "no policy loaded yet"), { "Retry-After": "1" });
}

export function createDecisionHttp(deps: DecisionHttpDeps): DecisionHttp {
  const { engine, tokens, currentPolicy, metrics, logger } = deps;
  const addressRules = deps.clientAddressRules ?? DEFAULT_CLIENT_ADDRESS_RULES;

  async function handleCheck(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!tokens.accepts(bearer(header(req, "authorization")))) {
      json(res, 401, errorBody("unauthorized", "missing or wrong service token"), { "WWW-Authenticate": "Bearer" });
      req.resume();
      return;
    }
    const body = parseJson(await readBody(req));
    if (!body.ok) return invalid(res, { field: "", message: "body: malformed JSON" });
    const parsed = parseCheckBody(body.value);
    if (!parsed.ok) return invalid(res, parsed.error);
    // Server-Timing tells the caller how long the decision itself took (store call included).
    const started = performance.now();
    if (parsed.batch) {
      const results = await Promise.all(parsed.requests.map((r) => engine.decide(r)));
      return json(res, 200, { results }, { "Server-Timing": `decide;dur=${(performance.now() - started).toFixed(2)}` });
    }
    const answer = await engine.decide(parsed.request);
    json(res, 200, answer, { "Server-Timing": `decide;dur=${(performance.now() - started).toFixed(2)}` });
  }

  async function handleForwardAuth(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    req.resume();
    if (!tokens.accepts(header(req, "x-sluice-token"))) {
      json(res, 401, errorBody("unauthorized", "missing or wrong X-Sluice-Token"));
      return;
    }
    let method = header(req, "x-forwarded-method") ?? header(req, "x-original-method");
    let uri = header(req, "x-forwarded-uri") ?? header(req, "x-original-uri");
    // Envoy's ext_authz (HTTP service) sends none of those: it repeats the client's method and
    // appends the client's path to its `path_prefix`, so `/v1/forward-auth/v1/orders/42?x=1` asks
    // about `GET /v1/orders/42?x=1` (examples/gateways/envoy.yaml).
    const rest = (req.url ?? "").slice(FORWARD_AUTH_PATH.length);
    if (!method && !uri && rest.startsWith("/")) {
      method = req.method;
      uri = rest;
    }
    if (!method || !uri) {
      return invalid(res, {
        field: "X-Forwarded-Uri",
        message: "X-Forwarded-Method and X-Forwarded-Uri (or X-Original-*) are required, or the client's path after /v1/forward-auth",
      });
    }
    const operation = `${method} ${uri}`;
    if (operation.length > MAX_FIELD_CHARS) return invalid(res, { field: "X-Forwarded-Uri", message: "operation: at most 512 characters" });
    const apiKey = header(req, "x-api-key") ?? bearer(header(req, "authorization")) ?? header(req, "authorization");
    // Never absent: a missing or unparseable address is the one shared `unknown` subject.
    const ip = clientAddressFromHeaders((name) => header(req, name), addressRules);
    if (apiKey === undefined || apiKey === "") {
      const doc = currentPolicy();
      if (!doc) return notReady(res);
      const answer = plainAnswer({ tenant: null, tier: null, operation: null, policyVersion: doc.version }, 401, "unknown_key");
      return json(res, 401, answer);
    }
    if (apiKey.length > MAX_FIELD_CHARS) return invalid(res, { field: "X-Api-Key", message: "key: at most 512 characters" });
    const request: DecisionRequest = { key: apiKey, operation, ip };
    const answer = await engine.decide(request);
    const headers: Record<string, string> = { ...answer.headers, "X-Sluice-Reason": answer.reason };
    if (answer.tenant) headers["X-Sluice-Tenant"] = answer.tenant;
    if (answer.delayMs > 0) headers["X-Sluice-Delay-Ms"] = String(answer.delayMs);
    if (answer.leaseId) headers["X-Sluice-Lease"] = answer.leaseId;
    json(res, answer.status, answer, headers);
  }

  /** A service-token POST's JSON body, or undefined once the error is answered. */
  async function authedJson(req: http.IncomingMessage, res: http.ServerResponse): Promise<{ value: unknown } | undefined> {
    if (!tokens.accepts(bearer(header(req, "authorization")))) {
      json(res, 401, errorBody("unauthorized", "missing or wrong service token"), { "WWW-Authenticate": "Bearer" });
      req.resume();
      return undefined;
    }
    const body = parseJson(await readBody(req));
    if (!body.ok) {
      invalid(res, { field: "", message: "body: malformed JSON" });
      return undefined;
    }
    return body;
  }

  async function handleRelease(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await authedJson(req, res);
    if (!body) return;
    const parsed = parseReleaseBody(body.value);
    if (!parsed.ok) return invalid(res, parsed.error);
    json(res, 200, { released: await engine.release(parsed.leaseId) });
  }

  async function handleSettle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await authedJson(req, res);
    if (!body) return;
    const out = await settleRoute(engine, body.value);
    json(res, out.status, out.body, out.headers);
  }

  const routes: Record<string, { methods: string[] | null; handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> | void }> = {
    "/v1/check": { methods: ["POST"], handle: handleCheck },
    [FORWARD_AUTH_PATH]: { methods: null, handle: handleForwardAuth },
    "/v1/release": { methods: ["POST"], handle: handleRelease },
    "/v1/settle": { methods: ["POST"], handle: handleSettle },
    "/healthz": { methods: ["GET", "HEAD"], handle: (_req, res) => json(res, 200, { ok: true }) },
    "/openapi.json": { methods: ["GET", "HEAD"], handle: (_req, res) => json(res, 200, decisionOpenApi()) },
    "/readyz": {
      methods: ["GET", "HEAD"],
      handle: (_req, res) => {
        const { ready, body } = deps.readiness();
        json(res, ready ? 200 : 503, body);
      },
    },
    "/metrics": {
      methods: ["GET"],
      handle: async (_req, res) => {
        const text = await (deps.metricsText ?? (() => metrics.registry.metrics()))();
        res.writeHead(200, { "Content-Type": metrics.registry.contentType });
        res.end(text);
      },
    },
  };

  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | null = null;

  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000 }, (req, res) => {
    inFlight++;
    res.on("close", () => {
      inFlight--;
      if (draining && inFlight === 0) drained?.();
    });
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const route = Object.hasOwn(routes, path) ? routes[path] : path.startsWith(`${FORWARD_AUTH_PATH}/`) ? routes[FORWARD_AUTH_PATH] : undefined;
    if (draining) res.setHeader("Connection", "close");
    if (!route) {
      req.resume();
      return json(res, 404, errorBody("not_found", "no such endpoint"));
    }
    if (route.methods && !route.methods.includes(req.method ?? "")) {
      req.resume();
      return json(res, 405, errorBody("method_not_allowed", `use ${route.methods.join(", ")}`), { Allow: route.methods.join(", ") });
    }
    const fail = (error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof BodyTooLarge) {
        json(res, 413, errorBody("payload_too_large", `body over ${MAX_BODY_BYTES} bytes`), { Connection: "close" });
        req.destroy();
        return;
      }
      if (error instanceof NotReadyError) return notReady(res);
      // The caller's request id (gateways send one) or a new one, in the line and in the answer.
      const reqId = requestId(req);
      logger.error({ reqId, path, method: req.method, err: errorMessage(error) }, "internal error");
      json(res, 500, errorBody("internal", "internal error"), { "X-Request-Id": reqId });
    };
    try {
      const pending = route.handle(req, res);
      if (pending) pending.catch(fail);
    } catch (error) {
      fail(error);
    }
  });
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    // The same error envelope as every other answer (field null: no single field is at fault).
    const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
    const body = JSON.stringify(errorBody("invalid_request", tooLarge ? "request headers too large" : "malformed HTTP"));
    const status = tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
    if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    else socket.destroy();
  });
  server.maxHeadersCount = 100;

  async function drain(): Promise<void> {
    draining = true;
    server.close();
    server.closeIdleConnections();
    if (inFlight > 0) {
      await new Promise<void>((resolve) => {
        drained = resolve;
        setTimeout(resolve, 10_000).unref();
      });
    }
    server.closeAllConnections();
  }

  return { server, drain };
}

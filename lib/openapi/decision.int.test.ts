/**
 * GET /openapi.json of a real decision server (real Redis): a valid OpenAPI 3.1 document, and the
 * server's real answers — decisions of every kind, batch, release, settle, errors, health — conform
 * to the schemas it documents for their path, method and status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientTestServer, startDecisionServer } from "../client/testing/decision";
import { openApiProblems, responseSchema, schemaProblems } from "./validate";

let sluice: ClientTestServer;
let doc: Record<string, unknown>;

beforeAll(async () => {
  sluice = await startDecisionServer(["oas"]);
  const res = await fetch(`${sluice.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json");
  doc = (await res.json()) as Record<string, unknown>;
});

afterAll(async () => {
  await sluice?.stop();
});

/** One real exchange: the answer's status and body. */
async function call(method: string, path: string, body?: unknown, token: string | null = sluice.token): Promise<{ path: string; method: string; status: number; body: unknown }> {
  const res = await fetch(`${sluice.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { path, method, status: res.status, body: res.headers.get("content-type")?.startsWith("application/json") ? (JSON.parse(text) as unknown) : text };
}

function conforms(exchange: { path: string; method: string; status: number; body: unknown }, mediaType = "application/json"): string[] {
  const schema = responseSchema(doc, exchange.path, exchange.method, exchange.status, mediaType);
  if (schema === null) return [`${exchange.method} ${exchange.path} ${exchange.status}: not documented`];
  return schemaProblems(doc, schema, exchange.body);
}

describe("the decision server's OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document describing check, release, settle, /json and health", () => {
    expect(openApiProblems(doc)).toEqual([]);
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths as object).sort()).toEqual(["/healthz", "/json", "/metrics", "/readyz", "/v1/check", "/v1/forward-auth", "/v1/release", "/v1/settle", "/v1/usage"]);
    // The request bodies are the parsers' schemas: the reserve flag and settle's fields are in them.
    const schemas = (doc.components as { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> }).schemas;
    expect(Object.keys(schemas.CheckRequest!.properties)).toEqual(["key", "tenant", "operation", "ip", "cost", "dryRun", "explain", "reserve"]);
    expect(schemas.SettleRequest!.required).toEqual(["reservationId", "actualCost"]);
    expect(schemas.SettleRequest!.properties.actualCost).toEqual({ type: "integer", minimum: 0, maximum: 1_000_000_000 });
  });

  it("every real answer conforms to the schema documented for its status", async () => {
    const keys = sluice.keys("oas");
    const op = "GET /v1/orders/1";
    const exchanges = [];
    for (let i = 0; i < 6; i++) exchanges.push(await call("POST", "/v1/check", { key: keys.free, operation: op }));
    expect(exchanges.map((e) => (e.body as { status: number }).status)).toEqual([200, 200, 200, 200, 200, 429]);
    exchanges.push(await call("POST", "/v1/check", { key: keys.free2, operation: op, explain: true, dryRun: true }));
    exchanges.push(await call("POST", "/v1/check", { key: "sk_nobody", operation: op }));
    exchanges.push(await call("POST", "/v1/check", { key: keys.suspended, operation: op }));
    exchanges.push(await call("POST", "/v1/check", { requests: [{ key: keys.free2, operation: op }, { tenant: "oas-conc", operation: "GET /v1/hold", dryRun: true }] }));
    const leased = await call("POST", "/v1/check", { key: keys.conc, operation: "GET /v1/hold" });
    exchanges.push(leased, await call("POST", "/v1/release", { leaseId: (leased.body as { leaseId: string }).leaseId }));
    const reserved = await call("POST", "/v1/check", { key: keys.free2, operation: op, cost: 3, reserve: true });
    const reservationId = (reserved.body as { reservationId: string }).reservationId;
    expect(reservationId).toMatch(/^rsv_/);
    exchanges.push(reserved);
    exchanges.push(await call("POST", "/v1/settle", { reservationId, actualCost: 1 }));
    exchanges.push(await call("POST", "/v1/settle", { reservationId, actualCost: 1 }));
    exchanges.push(await call("POST", "/v1/settle", { reservationId, actualCost: 2 }));
    exchanges.push(await call("POST", "/v1/settle", { reservationId: "rsv_none", actualCost: 2 }));
    exchanges.push(await call("POST", "/v1/settle", { reservationId }, sluice.token));
    exchanges.push(await call("POST", "/v1/check", { key: keys.free, operation: op, cost: 0 }));
    exchanges.push(await call("POST", "/v1/check", "{nope"));
    exchanges.push(await call("POST", "/v1/check", { key: keys.free, operation: op }, null));
    exchanges.push(await call("POST", "/v1/release", { leaseId: "" }));
    exchanges.push(await call("GET", "/healthz"), await call("GET", "/readyz"));
    const gateway = async (headers: Record<string, string>) => {
      const res = await fetch(`${sluice.url}/v1/forward-auth`, { headers: { "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/orders/7", ...headers } });
      return { path: "/v1/forward-auth", method: "GET", status: res.status, body: (await res.json()) as unknown };
    };
    exchanges.push(await gateway({ "x-sluice-token": sluice.token, "x-api-key": keys.free2 }));
    exchanges.push(await gateway({ "x-sluice-token": sluice.token, "x-api-key": keys.free })); // its five are spent
    exchanges.push(await gateway({ "x-sluice-token": sluice.token, "x-api-key": keys.suspended }));
    exchanges.push(await gateway({ "x-sluice-token": sluice.token, "x-api-key": "sk_nobody" }));
    exchanges.push(await gateway({ "x-api-key": keys.free2 }));
    exchanges.push(await gateway({ "x-sluice-token": sluice.token, "x-forwarded-uri": "", "x-api-key": keys.free2 }));
    // Envoy's rate limit service as JSON: a domain the policy has no section for (OK), Sluice's own domain, bad input, no token.
    const descriptor = { entries: [{ key: "api_key", value: "sk_nobody" }, { key: "operation", value: op }] };
    exchanges.push(await call("POST", "/json", { domain: "edge", descriptors: [descriptor] }));
    exchanges.push(await call("POST", "/json", { domain: "sluice", hitsAddend: "1", descriptors: [descriptor] }));
    exchanges.push(await call("POST", "/json", { domain: "edge", descriptors: [{ entries: [{ kee: "x" }] }] }));
    exchanges.push(await call("POST", "/json", { domain: "edge", descriptors: [descriptor] }, null));
    expect(exchanges.map((e) => e.status)).toEqual([
      200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 409, 404, 400, 400, 400, 401, 400, 200, 200, 200, 429, 403, 401, 401, 400, 200, 429, 400, 401,
    ]);
    for (const e of exchanges) expect(conforms(e), `${e.method} ${e.path} ${e.status} ${JSON.stringify(e.body)}`).toEqual([]);
    const metrics = await call("GET", "/metrics");
    expect(conforms(metrics, "text/plain")).toEqual([]);
  });

  it("the check can fail: an answer off its schema is reported", () => {
    const answer = { allowed: true, status: 418, reason: "ok", tenant: null, tier: null, operation: null, policyVersion: 1, limit: 0, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0, delayMs: 0, headers: {} };
    expect(conforms({ path: "/v1/check", method: "POST", status: 200, body: answer })).not.toEqual([]);
    const { headers: _headers, ...noHeaders } = { ...answer, status: 200 };
    expect(conforms({ path: "/v1/check", method: "POST", status: 200, body: noHeaders })).not.toEqual([]);
    expect(conforms({ path: "/v1/settle", method: "POST", status: 200, body: { reservationId: "x", reservedCost: 1, actualCost: 1, refunded: -1, replayed: false } })).not.toEqual([]);
  });
});

/**
 * `sluice openapi` on the published demo policy (real PostgreSQL, the CLI as a process): the
 * document made from the policy alone, YAML output, a given spec merged without losing any of its
 * content, and clear errors with exit code 1 for bad flags and bad specs.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runSluice } from "../testing/sluice-cli";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { openApiProblems } from "@/lib/openapi/validate";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { publishPolicy } from "@/lib/services/policy/publish-policy";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DEMO = readFileSync(path.join(ROOT, "examples/demo-policy.yaml"), "utf8");

const fresh = freshDatabasePerFile();
let db: PrismaClient;
let dir: string;

const sluice = (...args: string[]) => runSluice({ DATABASE_URL: fresh.url }, args);

type Json = Record<string, unknown>;
type Op = { responses: Record<string, { description: string; headers?: Json; content?: Json }>; "x-sluice-ratelimit"?: Json; parameters?: Json[] };
const op = (doc: Json, route: string, method: string) => (doc.paths as Record<string, Record<string, Op>>)[route]![method]!;

/** Every value of `part` is in `whole` at the same place (objects may have gained keys, nothing else changed). */
function lost(part: unknown, whole: unknown, at = "$"): string[] {
  if (typeof part !== "object" || part === null) return Object.is(part, whole) ? [] : [`${at}: ${JSON.stringify(part)} became ${JSON.stringify(whole)}`];
  if (Array.isArray(part)) {
    if (!Array.isArray(whole) || whole.length !== part.length) return [`${at}: array changed`];
    return part.flatMap((p, i) => lost(p, whole[i], `${at}[${i}]`));
  }
  if (typeof whole !== "object" || whole === null) return [`${at}: object became ${JSON.stringify(whole)}`];
  return Object.entries(part).flatMap(([k, v]) => (k in whole ? lost(v, (whole as Json)[k], `${at}.${k}`) : [`${at}.${k}: dropped`]));
}

beforeAll(async () => {
  ({ db } = fresh);
  await applyPolicyFile(db, DEMO, { actor: "test:openapi" });
  await publishPolicy({ db, redis: null }, { actor: "test:openapi" });
  dir = mkdtempSync(path.join(tmpdir(), "sluice-openapi-"));
});

describe("sluice openapi", () => {
  it("makes a valid OpenAPI 3.1 document from the demo policy alone: 429, headers and limits per tier on every limited operation", async () => {
    const r = await sluice("openapi");
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as Json;
    expect(openApiProblems(doc)).toEqual([]);
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths as Json).sort()).toEqual([
      "/v1/exports",
      "/v1/orders",
      "/v1/orders/{orders_id}",
      "/v1/products",
      "/v1/products/{products_id}",
      "/v1/products/{products_id}/reviews",
      "/v1/search",
      "/v1/uploads",
      "/v1/uploads/{rest}",
      "/v1/webhooks/{rest}",
    ]);
    expect(Object.keys((doc.paths as Record<string, Json>)["/v1/webhooks/{rest}"]!).sort()).toEqual(["delete", "get", "patch", "post", "put"]);
    const read = op(doc, "/v1/orders/{orders_id}", "get");
    expect(read.parameters).toEqual([{ name: "orders_id", in: "path", required: true, description: "one path segment", schema: { type: "string" } }]);
    expect(read.responses["429"]).toEqual({
      description: expect.stringMatching(/^Too Many Requests/) as unknown,
      headers: { RateLimit: { $ref: "#/components/headers/SluiceRateLimit" }, "RateLimit-Policy": { $ref: "#/components/headers/SluiceRateLimitPolicy" }, "Retry-After": { $ref: "#/components/headers/SluiceRetryAfter" } },
      content: { "application/problem+json": { schema: { $ref: "#/components/schemas/SluiceRateLimitProblem" } } },
    });
    expect(Object.keys(read.responses["200"]!.headers!)).toEqual(["RateLimit", "RateLimit-Policy"]);
    expect(read.responses["503"]).toBeUndefined();
    const ext = read["x-sluice-ratelimit"] as { operation: string; failureMode: string; cost: number; tiers: Record<string, { limits: Json[]; quotas: Json[] }>; globalCaps: Json[] };
    expect(ext).toMatchObject({ operation: "orders-read", policyVersion: 1, cost: 1, failureMode: "open", globalCaps: [] });
    expect(Object.keys(ext.tiers)).toEqual(["free", "pro", "enterprise"]);
    expect(ext.tiers.free!.limits).toEqual([
      { name: "free-api_key", scope: "api_key", algorithm: "sliding_window_counter", limit: 100, window: "1m", mode: "reject" },
      { name: "free-ip", scope: "ip", algorithm: "fixed_window", limit: 300, window: "1m", mode: "reject" },
      { name: "free-tenant", scope: "tenant", algorithm: "concurrency", limit: 10, leaseTtl: "30s", mode: "reject" },
      { name: "free-orders-read-ip", scope: "ip", algorithm: "leaky_bucket", limit: 20, window: "1s", burst: 40, mode: "delay", maxDelay: "500ms" },
    ]);
    expect(ext.tiers.free!.quotas).toEqual([{ period: "month", limit: 10000, overage: "block" }]);
    expect(ext.tiers.pro!.quotas).toEqual([{ period: "month", limit: 1000000, overage: "bill" }]);
    // export fails closed (a 503 is part of its contract) and shares the weighted global cap.
    const exp = op(doc, "/v1/exports", "post");
    expect(Object.keys(exp.responses).sort()).toEqual(["200", "429", "503"]);
    expect(exp["x-sluice-ratelimit"]).toMatchObject({ operation: "export", failureMode: "closed", globalCaps: [{ limit: 50, window: "1m", share: "weighted" }] });
    expect((exp["x-sluice-ratelimit"] as { tiers: Record<string, { quotas: Json[] }> }).tiers.free!.quotas).toEqual([
      { period: "month", limit: 10000, overage: "block" },
      { period: "day", limit: 20, overage: "block" },
    ]);
    expect((doc.components as { schemas: Json }).schemas.SluiceRateLimitProblem).toMatchObject({ required: ["type", "title", "status", "detail", "reason"] });

    const yaml = await sluice("openapi", "--format", "yaml");
    expect(yaml.code).toBe(0);
    expect(yaml.stdout).toMatch(/^openapi: 3\.1\.0\n/);
    expect(parseYaml(yaml.stdout)).toEqual(doc);
  }, 300_000);

  it("merges into a given spec without losing any of its content", async () => {
    const theirs = {
      openapi: "3.1.0",
      info: { title: "Acme orders", version: "2.3.0", description: "Our API" },
      servers: [{ url: "https://api.acme.test" }],
      tags: [{ name: "orders" }],
      paths: {
        "/v1/orders/{orderId}": {
          parameters: [{ name: "orderId", in: "path", required: true, schema: { type: "string", format: "uuid" } }],
          get: {
            operationId: "getOrder",
            tags: ["orders"],
            responses: {
              200: { description: "The order", headers: { ETag: { schema: { type: "string" } } }, content: { "application/json": { schema: { $ref: "#/components/schemas/Order" } } } },
              404: { description: "No such order" },
            },
          },
          delete: { operationId: "deleteOrder", responses: { 204: { description: "Gone" }, 429: { description: "Our own words for it", content: { "application/json": { schema: { type: "object" } } } } } },
        },
        "/v1/exports": { post: { operationId: "startExport", requestBody: { content: { "application/json": { schema: { type: "object" } } } }, responses: { 202: { description: "Started" } } } },
      },
      components: { schemas: { Order: { type: "object", properties: { id: { type: "string" } }, required: ["id"] } }, securitySchemes: { key: { type: "apiKey", in: "header", name: "X-Api-Key" } } },
      security: [{ key: [] }],
      "x-their-extension": { kept: true },
    };
    const file = path.join(dir, "their-api.yaml");
    writeFileSync(file, stringifyYaml(theirs));
    const r = await sluice("openapi", "--spec", file);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("policy v1: 3 operations limited\n");
    const doc = JSON.parse(r.stdout) as Json;
    expect(lost(theirs, doc)).toEqual([]);
    expect(openApiProblems(doc)).toEqual([]);
    const get = op(doc, "/v1/orders/{orderId}", "get");
    expect(Object.keys(get.responses["200"]!.headers!)).toEqual(["ETag", "RateLimit", "RateLimit-Policy"]);
    expect(get.responses["404"]).toEqual({ description: "No such order" });
    expect(get["x-sluice-ratelimit"]).toMatchObject({ operation: "orders-read" });
    // Their own 429 keeps its words and content, and gains the headers and the problem body.
    const del = op(doc, "/v1/orders/{orderId}", "delete");
    expect(del.responses["429"]!.description).toBe("Our own words for it");
    expect(Object.keys(del.responses["429"]!.content!)).toEqual(["application/json", "application/problem+json"]);
    expect(del["x-sluice-ratelimit"]).toMatchObject({ operation: "orders-write", cost: 2 });
    expect(Object.keys(op(doc, "/v1/exports", "post").responses).sort()).toEqual(["202", "429", "503"]);

    // JSON in, YAML out: the same document.
    const jsonFile = path.join(dir, "their-api.json");
    writeFileSync(jsonFile, JSON.stringify(theirs));
    const y = await sluice("openapi", "--spec", jsonFile, "--format", "yaml");
    expect(parseYaml(y.stdout)).toEqual(doc);
  }, 300_000);

  it("bad flags and bad specs: a clear error naming them, exit code 1", async () => {
    const swagger = path.join(dir, "swagger.yaml");
    writeFileSync(swagger, "swagger: '2.0'\ninfo: { title: x, version: '1' }\npaths: {}\n");
    const garbage = path.join(dir, "garbage.yaml");
    writeFileSync(garbage, "openapi: 3.1.0\npaths: [unclosed\n");
    const noPaths = path.join(dir, "paths.yaml");
    writeFileSync(noPaths, "openapi: 3.1.0\ninfo: { title: x, version: '1' }\npaths: [1, 2]\n");
    const cases: [string[], RegExp][] = [
      [["openapi", "--spec", path.join(dir, "missing.yaml")], /^error: --spec .*missing\.yaml: no such file\n$/],
      [["openapi", "--spec", swagger], /^error: --spec .*swagger\.yaml: openapi: expected an OpenAPI 3\.x version like "3\.1\.0", got null \(Swagger 2\.0 is not supported\)\n$/],
      [["openapi", "--spec", garbage], /^error: --spec .*garbage\.yaml: neither YAML nor JSON/],
      [["openapi", "--spec", noPaths], /^error: --spec .*paths\.yaml: paths: expected an object\n$/],
      [["openapi", "--format", "xml"], /argument 'xml' is invalid\. Allowed choices are json, yaml/],
      [["openapi", "--version", "0"], /--version: expected a version number ≥ 1, got "0"/],
      [["openapi", "--version", "9"], /^error: policy version 9 does not exist\n$/],
    ];
    for (const [args, message] of cases) {
      const r = await sluice(...args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr, args.join(" ")).toMatch(message);
    }
  }, 300_000);
});

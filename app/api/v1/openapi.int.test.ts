/**
 * GET /api/v1/openapi.json: a valid OpenAPI 3.1 document that lists every route handler under
 * app/api/v1 with its methods, and the handlers' real answers (real PostgreSQL and Redis) — policy
 * apply, export, publish, rollback, discard, failure modes, usage, quotas, billing, and their
 * errors — conform to the schema documented for their path, method, status and media type.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { openApiProblems, responseSchema, schemaProblems } from "@/lib/openapi/validate";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { GET as billingExports } from "./billing/exports/route";
import { GET as billingPeriods } from "./billing/periods/route";
import { GET as openapi } from "./openapi.json/route";
import { POST as apply } from "./policy/apply/route";
import { POST as discard } from "./policy/discard/route";
import { GET as exportPolicy } from "./policy/export/route";
import { POST as failureModes } from "./policy/failure-modes/route";
import { POST as publish } from "./policy/publish/route";
import { POST as rollback } from "./policy/rollback/route";
import { GET as getRollout, POST as startRollout } from "./policy/rollout/route";
import { POST as abortRollout } from "./policy/rollout/abort/route";
import { POST as pauseRollout } from "./policy/rollout/pause/route";
import { POST as promoteRollout } from "./policy/rollout/promote/route";
import { GET as quotas } from "./quotas/route";
import { GET as usage } from "./usage/route";
import { GET as top } from "./usage/top/route";
import { routeStoresPerFile } from "./testing/routes";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8");

const stores = routeStoresPerFile("oas");
let db: PrismaClient;
let doc: Record<string, unknown>;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  ({ db } = stores);
  for (const role of ["admin", "product"]) tokens[role] = (await createApiToken({ db }, { kind: "admin", role, name: role }, "test")).token;
  const res = openapi();
  expect(res.status).toBe(200);
  doc = (await res.json()) as Record<string, unknown>;
});

interface Exchange {
  route: string;
  method: string;
  status: number;
  mediaType: string;
  body: unknown;
}

async function call(handler: (r: Request) => Promise<Response>, route: string, method: string, query = "", init: { body?: string; type?: string; token?: string | null } = {}): Promise<Exchange> {
  const headers = new Headers();
  const token = init.token === undefined ? tokens.admin : init.token;
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (init.type) headers.set("content-type", init.type);
  const res = await handler(new Request(`http://localhost:3000${route}${query}`, { method, body: init.body, headers }));
  const mediaType = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const text = await res.text();
  return { route, method, status: res.status, mediaType, body: mediaType === "application/json" ? (JSON.parse(text) as unknown) : text };
}

function conforms(e: Exchange): string[] {
  const schema = responseSchema(doc, e.route, e.method, e.status, e.mediaType);
  if (schema === null) return [`${e.method} ${e.route} ${e.status} ${e.mediaType}: not documented`];
  return schemaProblems(doc, schema, e.body);
}

/** Every route.ts under app/api/v1 and the methods it exports, as `/api/v1/... METHOD`. */
function routeHandlers(): string[] {
  const root = import.meta.dirname;
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === "route.ts") {
        // A Next.js dynamic segment (`[id]`) is OpenAPI's path parameter (`{id}`).
        const route = `/api/v1/${path.relative(root, dir).split(path.sep).join("/")}`.replace(/\[(\w+)\]/g, "{$1}");
        for (const m of readFileSync(full, "utf8").matchAll(/export (?:(?:async )?function|const) (GET|POST|PUT|PATCH|DELETE)\b/g)) out.push(`${route} ${m[1]}`);
      }
    }
  };
  walk(root);
  return out.sort();
}

describe("the control plane's OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document listing every admin route handler and its methods", () => {
    expect(openApiProblems(doc)).toEqual([]);
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([route, item]) => Object.keys(item).map((m) => `${route} ${m.toUpperCase()}`))
      .sort();
    expect(documented).toEqual(routeHandlers());
  });

  it("the route handlers' real answers conform to the documented schemas", async () => {
    const exchanges: Exchange[] = [];
    const yaml = "application/yaml";
    exchanges.push(await call(apply, "/api/v1/policy/apply", "POST", "?dryRun=1", { body: DEMO, type: yaml }));
    exchanges.push(await call(apply, "/api/v1/policy/apply", "POST", "", { body: DEMO, type: yaml }));
    exchanges.push(await call(apply, "/api/v1/policy/apply", "POST", "", { body: DEMO.replace("leaseTtl: 30s }", "leaseTtl: soon }"), type: yaml }));
    exchanges.push(await call(apply, "/api/v1/policy/apply", "POST", "", { body: "x", type: "image/png" }));
    exchanges.push(await call(apply, "/api/v1/policy/apply", "POST", "", { body: DEMO, type: yaml, token: null }));
    exchanges.push(await call(exportPolicy, "/api/v1/policy/export", "GET"));
    exchanges.push(await call(exportPolicy, "/api/v1/policy/export", "GET", "?format=json"));
    exchanges.push(await call(publish, "/api/v1/policy/publish", "POST", "", { body: '{"note":"first"}', type: "application/json" }));
    exchanges.push(await call(publish, "/api/v1/policy/publish", "POST", "", { body: "{}", type: "application/json" }));
    exchanges.push(await call(publish, "/api/v1/policy/publish", "POST", "", { body: '{"note":7}', type: "application/json" }));
    exchanges.push(await call(failureModes, "/api/v1/policy/failure-modes", "POST", "", { body: '{"default":"closed"}', type: "application/json" }));
    exchanges.push(await call(failureModes, "/api/v1/policy/failure-modes", "POST", "", { body: '{"default":"closed"}', type: "application/json", token: tokens.product }));
    exchanges.push(await call(rollback, "/api/v1/policy/rollback", "POST", "", { body: '{"version":1}', type: "application/json" }));
    exchanges.push(await call(rollback, "/api/v1/policy/rollback", "POST", "", { body: '{"version":99}', type: "application/json" }));
    exchanges.push(await call(rollback, "/api/v1/policy/rollback", "POST", "", { body: "{}", type: "application/json" }));
    exchanges.push(await call(discard, "/api/v1/policy/discard", "POST"));
    const range = "?from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z";
    exchanges.push(await call(usage, "/api/v1/usage", "GET", `${range}&granularity=hour`));
    exchanges.push(await call(usage, "/api/v1/usage", "GET", `${range}&granularity=second`));
    exchanges.push(await call(top, "/api/v1/usage/top", "GET", `${range}&by=denied`));
    exchanges.push(await call(quotas, "/api/v1/quotas", "GET", "?period=2026-11"));
    exchanges.push(await call(billingPeriods, "/api/v1/billing/periods", "GET"));
    // No usage yet: the current month exports (provisional, every tenant's lines at 0), an earlier one is a 404.
    exchanges.push(await call(billingExports, "/api/v1/billing/exports", "GET", `?period=${new Date().toISOString().slice(0, 7)}&format=json`));
    exchanges.push(await call(billingExports, "/api/v1/billing/exports", "GET", "?period=2026-11&format=csv"));
    exchanges.push(await call(billingExports, "/api/v1/billing/exports", "GET", "?period=November"));
    expect(exchanges.map((e) => `${e.route} ${e.status}`)).toEqual([
      "/api/v1/policy/apply 200",
      "/api/v1/policy/apply 200",
      "/api/v1/policy/apply 400",
      "/api/v1/policy/apply 415",
      "/api/v1/policy/apply 401",
      "/api/v1/policy/export 200",
      "/api/v1/policy/export 200",
      "/api/v1/policy/publish 200",
      "/api/v1/policy/publish 200",
      "/api/v1/policy/publish 400",
      "/api/v1/policy/failure-modes 200",
      "/api/v1/policy/failure-modes 403",
      "/api/v1/policy/rollback 200",
      "/api/v1/policy/rollback 404",
      "/api/v1/policy/rollback 400",
      "/api/v1/policy/discard 200",
      "/api/v1/usage 200",
      "/api/v1/usage 400",
      "/api/v1/usage/top 200",
      "/api/v1/quotas 200",
      "/api/v1/billing/periods 200",
      "/api/v1/billing/exports 200",
      "/api/v1/billing/exports 404",
      "/api/v1/billing/exports 400",
    ]);
    for (const e of exchanges) expect(conforms(e), `${e.method} ${e.route} ${e.status} ${JSON.stringify(e.body).slice(0, 400)}`).toEqual([]);
    // The check can fail: a publish answer without its version is reported.
    expect(conforms({ ...exchanges[7]!, body: { status: "published", checksum: "x", previousVersion: null } })).toEqual(["$.version: required"]);
  });

  it("the rollout routes' answers conform, and a bad step is a 400 naming it", async () => {
    const json = "application/json";
    await call(apply, "/api/v1/policy/apply", "POST", "", { body: DEMO, type: "application/yaml" });
    await call(publish, "/api/v1/policy/publish", "POST", "", { body: "{}", type: json });
    const cut = DEMO.replace("sliding_window_counter, limit: 100, window: 1m", "sliding_window_counter, limit: 50, window: 1m");
    await call(apply, "/api/v1/policy/apply", "POST", "", { body: cut, type: "application/yaml" });
    const exchanges: Exchange[] = [];
    exchanges.push(await call(startRollout, "/api/v1/policy/rollout", "POST", "", { body: '{"canaries":["acme"],"steps":["10%:1h","50%"]}', type: json }));
    exchanges.push(await call(startRollout, "/api/v1/policy/rollout", "POST", "", { body: '{"canaries":["acme"],"steps":["10%:1h","100%"]}', type: json, token: tokens.product }));
    exchanges.push(await call(getRollout, "/api/v1/policy/rollout", "GET"));
    exchanges.push(await call(promoteRollout, "/api/v1/policy/rollout/promote", "POST"));
    exchanges.push(await call(pauseRollout, "/api/v1/policy/rollout/pause", "POST", "", { body: '{"reason":"look at the canaries"}', type: json }));
    exchanges.push(await call(pauseRollout, "/api/v1/policy/rollout/pause", "POST", "", { body: '{"reason":7}', type: json }));
    exchanges.push(await call(abortRollout, "/api/v1/policy/rollout/abort", "POST"));
    exchanges.push(await call(abortRollout, "/api/v1/policy/rollout/abort", "POST"));
    expect(exchanges.map((e) => `${e.route} ${e.status}`)).toEqual([
      "/api/v1/policy/rollout 400",
      "/api/v1/policy/rollout 200",
      "/api/v1/policy/rollout 200",
      "/api/v1/policy/rollout/promote 200",
      "/api/v1/policy/rollout/pause 200",
      "/api/v1/policy/rollout/pause 400",
      "/api/v1/policy/rollout/abort 200",
      "/api/v1/policy/rollout/abort 409",
    ]);
    expect(exchanges[0]!.body).toMatchObject({ error: { code: "invalid_request", field: "steps[1]", message: "steps[1]: the last step must be 100%, got 50%" } });
    expect(exchanges[2]!.body).toMatchObject({ rollout: { state: "running", stepLabel: "step 1 of 3: 1 canary for 15m", cohort: { canaries: ["acme"] } } });
    expect(exchanges[4]!.body).toMatchObject({ rollout: { state: "paused", reason: "look at the canaries" } });
    expect(exchanges[6]!.body).toMatchObject({ rollout: { state: "aborted" } });
    for (const e of exchanges) expect(conforms(e), `${e.method} ${e.route} ${e.status} ${JSON.stringify(e.body).slice(0, 400)}`).toEqual([]);
  });

  it("a query value the document does not allow is a 400 naming it: a mistyped dryRun never applies", async () => {
    const before = await call(exportPolicy, "/api/v1/policy/export", "GET", "?format=json");
    const typo = await call(apply, "/api/v1/policy/apply", "POST", "?dryRun=yes", { body: "version: 1\n", type: "application/yaml" });
    expect(typo.status).toBe(400);
    expect(typo.body).toMatchObject({ error: { code: "invalid_request", field: "dryRun" } });
    expect(conforms(typo)).toEqual([]);
    expect((await call(exportPolicy, "/api/v1/policy/export", "GET", "?format=json")).body).toEqual(before.body);
    const format = await call(exportPolicy, "/api/v1/policy/export", "GET", "?format=toml");
    expect(format.status).toBe(400);
    expect(format.body).toMatchObject({ error: { code: "invalid_request", field: "format" } });
  });
});

/**
 * POST /api/v1/policy/apply?dryRun=1 under hostile documents, through the route handler with a
 * real admin token and database: every bound is a 400 naming the problem in the error envelope,
 * and no body or content type answers a 5xx (fast-check).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { POLICY_FILE_MAX_DEPTH, POLICY_FILE_MAX_NODES } from "@/lib/services/policy/policy-input";
import { aliasBomb } from "@/test/hostile-policy";
import { POST as apply } from "./apply/route";
import { routeStoresPerFile } from "../testing/routes";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../../examples/demo-policy.yaml"), "utf8");

const stores = routeStoresPerFile("bounds");
let db: PrismaClient;
let token: string;

const dryRun = (body: BodyInit, contentType = "application/yaml") =>
  apply(new Request("http://localhost:3000/api/v1/policy/apply?dryRun=1", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    body,
  }));

async function refused(res: Response): Promise<{ code: string; message: string; field: string | null }> {
  const body = (await res.json()) as { error: { code: string; message: string; field: string | null } };
  expect(res.status, JSON.stringify(body)).toBe(400);
  expect(Object.keys(body.error)).toEqual(expect.arrayContaining(["code", "message", "field"]));
  return body.error;
}

beforeAll(async () => {
  ({ db } = stores);
  // A dry run needs only policy.read: the least a caller of this route can have.
  token = (await createApiToken({ db }, { kind: "admin", role: "billing", name: "reader" }, "test")).token;
});

describe("policy apply: hostile documents are 400s naming the problem", () => {
  it("the demo policy dry-runs (200), so the refusals below are about the document", async () => {
    const res = await dryRun(DEMO);
    expect(res.status).toBe(200);
  });

  it("a YAML alias bomb: 400 invalid_policy naming the aliases (issue #17: it answered 500)", async () => {
    const error = await refused(await dryRun(aliasBomb()));
    expect(error.code).toBe("invalid_policy");
    expect(error.message).toMatch(/aliases expand too far/);
  });

  it("too many values, too deep (YAML and JSON), a key twice: 400 naming each", async () => {
    expect((await refused(await dryRun(`[${Array(POLICY_FILE_MAX_NODES + 1).fill("0").join(",")}]`))).message).toBe(`the document has over ${POLICY_FILE_MAX_NODES} values`);
    const deep = `${"[".repeat(POLICY_FILE_MAX_DEPTH + 5)}${"]".repeat(POLICY_FILE_MAX_DEPTH + 5)}`;
    expect((await refused(await dryRun(`x: ${deep}`))).message).toBe(`the document nests deeper than ${POLICY_FILE_MAX_DEPTH} levels`);
    expect((await refused(await dryRun(`{"version": 1, "x": ${deep}}`, "application/json"))).message).toBe(`the document nests deeper than ${POLICY_FILE_MAX_DEPTH} levels`);
    expect((await refused(await dryRun("version: 1\nversion: 1\n"))).message).toMatch(/Map keys must be unique \("version" twice\)/);
  });
});

describe("policy apply fuzz: never a 5xx, always the envelope", () => {
  const contentTypes = fc.constantFrom("application/yaml", "application/json", "text/plain", "", "application/json; charset=utf-8", "text/html", "multipart/form-data");
  const pieces = fc.constantFrom("version: 1\n", "tiers:\n", "  - ", "name: ", "&a ", "*a", "[", "]", "{", "}", ", ", ": ", "\n", "'", '"', "|\n", "!!binary ", "<<: *a\n", "---\n", "%YAML 1.2\n", "\u0000", "\uFEFF", '{"version":1}', "null", "1e309");
  const bodies = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.array(pieces, { maxLength: 40 }).map((p) => p.join("")),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? "null"),
    fc.uint8Array({ maxLength: 200 }),
  );

  it("any body with any content type answers 200 or a 4xx with the error envelope", async () => {
    await fc.assert(
      fc.asyncProperty(bodies, contentTypes, async (body, type) => {
        const res = await dryRun(body, type);
        const json = (await res.json()) as { error?: { code: unknown; message: unknown; field: unknown } };
        expect(res.status, JSON.stringify(json)).toBeLessThan(500);
        if (res.status !== 200) {
          expect(typeof json.error?.code).toBe("string");
          expect(typeof json.error?.message).toBe("string");
          expect(json.error && "field" in json.error).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  }, 300_000);
});

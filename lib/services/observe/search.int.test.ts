/** Exact key lookup in the shell's search (#29 extra): a pasted whole key is found by its hash, not by its prefix alone. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "../../generated/prisma/client";
import { applyPolicyFile } from "../policy/apply-policy-file";
import { search } from "./search";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8");

let fresh: FreshDatabase;
let db: PrismaClient;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  await applyPolicyFile(db, DEMO, { actor: "test:search" });
}, 120_000);
afterAll(async () => {
  await fresh?.drop();
});

describe("exact key lookup", () => {
  it("names the key a whole value is, and says when a value with a known prefix is no key", async () => {
    const hit = await search(db, "sk_test_acme_ci_0001");
    expect(hit.exact).toEqual({ id: expect.stringMatching(/^key_/), tenant: "acme", name: "ci", prefix: "sk_test_acme", revoked: false });
    const miss = await search(db, "sk_test_acme_ci_9999");
    expect(miss.exact).toBeNull();
    expect(miss.keys.length).toBeGreaterThan(0); // the prefix still matches: only the exact lookup tells them apart
    expect((await search(db, "sk_test_acme")).exact).toBeUndefined();
  });
});

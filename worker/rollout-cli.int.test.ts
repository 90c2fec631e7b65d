import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runSluice } from "./testing/sluice-cli";
import { freshDatabasePerFile, testRedisPrefix, testRedisUrl } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { POST as startRolloutRoute } from "@/app/api/v1/policy/rollout/route";
import { SINGLE_NODE_REFUSAL } from "@/lib/services/rollout/start-rollout";
import { createHash } from "node:crypto";

const ROOT = path.resolve(import.meta.dirname, "..");
const DEMO = path.join(ROOT, "examples/demo-policy.yaml");

const fresh = freshDatabasePerFile();
let db: PrismaClient;

const sluice = (...args: string[]) =>
  runSluice({ DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: `${testRedisPrefix()}rocli:` }, args);

beforeAll(() => ({ db } = fresh));

describe("sluice publish --canary/--rollout and sluice rollout", () => {
  it("starts a rollout to canaries, reports it, refuses bad steps naming them, and promotes it to everyone", async () => {
    expect((await sluice("apply", "-f", DEMO)).code).toBe(0);
    expect((await sluice("publish")).code).toBe(0);
    const cut = path.join(tmpdir(), `sluice-rollout-${process.pid}.yaml`);
    writeFileSync(cut, readFileSync(DEMO, "utf8").replace("sliding_window_counter, limit: 100, window: 1m", "sliding_window_counter, limit: 50, window: 1m"));
    expect((await sluice("apply", "-f", cut)).code).toBe(0);

    const bad = await sluice("publish", "--canary", "acme,nobody", "--steps", "10%:1h,50%");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("error: steps[1]: the last step must be 100%, got 50%");
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const unknown = await sluice("publish", "--canary", "acme,nobody", "--steps", "10%:1h,100%");
    expect(unknown.stderr).toContain('error: canaries[1]: no tenant "nobody" in the draft');

    const file = path.join(tmpdir(), `sluice-rollout-${process.pid}.json`);
    writeFileSync(file, JSON.stringify({ canaries: ["acme"], steps: ["10%:1h", "100%"], guardrails: { maxDenyShareIncrease: "five" } }));
    const badFile = await sluice("publish", "--rollout", file);
    expect(badFile.stderr).toContain("error: guardrails.maxDenyShareIncrease:");

    const started = await sluice("publish", "--canary", "acme,globex", "--steps", "10%:1h,100%");
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/Started rollout ro_\w+: v2 goes to the cohort first; v1 stays live/);
    const status = await sluice("rollout", "status");
    expect(status.stdout).toContain("step 1 of 3: 2 canaries for 15m");
    expect(status.stdout).toContain("canaries acme, globex");
    expect(status.stdout).toContain("guardrails:");
    expect((await sluice("publish")).stderr).toMatch(/error: no publish to everyone while rollout ro_\w+ is running/);
    expect((await sluice("rollout", "promote")).stdout).toContain("step 2 of 3");
    const done = await sluice("rollout", "promote");
    expect(done.stdout).toContain("completed");
    expect(await db.policyVersion.count()).toBe(2);
  }, 300_000);
});

describe("single-node mode", () => {
  it("refuses a rollout from the CLI and the REST API, saying why, and starts nothing", async () => {
    // A draft that differs from the live version (the test above left the cut live).
    expect((await sluice("apply", "-f", DEMO)).code).toBe(0);
    const cli = await runSluice({ DATABASE_URL: fresh.url, SLUICE_MODE: "single-node" }, ["publish", "--canary", "acme", "--steps", "10%:1h,100%"]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(`error: ${SINGLE_NODE_REFUSAL}`);

    const token = "sl_admin_rollout_single_0001";
    await db.apiToken.create({ data: { id: "tok_rollout_single", kind: "admin", name: "admin", hash: createHash("sha256").update(token).digest("hex"), prefix: "sl_admin", role: "admin" } });
    const saved = { mode: process.env.SLUICE_MODE, url: process.env.DATABASE_URL };
    process.env.SLUICE_MODE = "single-node";
    process.env.DATABASE_URL = fresh.url;
    try {
      const res = await startRolloutRoute(
        new Request("http://localhost/api/v1/policy/rollout", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ canaries: ["acme"], steps: ["10%:1h", "100%"] }) }),
      );
      expect(res.status).toBe(409);
      expect(JSON.stringify(await res.json())).toContain(SINGLE_NODE_REFUSAL);
    } finally {
      for (const [k, v] of [["SLUICE_MODE", saved.mode], ["DATABASE_URL", saved.url]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(await db.rollout.count({ where: { state: { in: ["running", "paused"] } } })).toBe(0);
  }, 120_000);
});


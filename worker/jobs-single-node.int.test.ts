/**
 * `npm run worker` in single-node mode needs no Redis: it runs the Postgres jobs, skips the Redis
 * drain and reconciliation, and says so in its log. Real PostgreSQL; REDIS_URL points at a port
 * where nothing listens, so any Redis use would fail the job pass.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { freshDatabasePerFile } from "../test/helpers";
import { type Db } from "../lib/db/client";
import { freePort } from "../lib/net/ports";
import { runJobs } from "./jobs";

const ROOT = path.resolve(import.meta.dirname, "..");
const fresh = freshDatabasePerFile();
let db: Db;

beforeAll(() => ({ db } = fresh));

describe("worker in single-node mode", () => {
  it("runs every Postgres job without a Redis client", async () => {
    const last = {};
    await runJobs({ db, redis: null, billingGraceMs: 3_600_000, downsampleAfterMs: 7 * 86_400_000, allowPrivateWebhooks: false }, Date.now(), last);
    expect(Object.keys(last).sort()).toEqual(["alerts", "billing", "downsample"]);
  });

  it("starts, logs that it skips the Redis jobs, and stops on SIGTERM, with no Redis reachable", async () => {
    const deadPort = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "worker/jobs.ts")], {
      cwd: ROOT,
      env: { ...process.env, SLUICE_MODE: "single-node", DATABASE_URL: fresh.url, REDIS_URL: `redis://127.0.0.1:${deadPort}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const deadline = Date.now() + 60_000;
    while (!out.includes("Redis usage drain and quota reconciliation are skipped") && Date.now() < deadline && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 100));
    }
    // One whole pass, then stop.
    await new Promise((r) => setTimeout(r, 1_500));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toContain('"mode":"single-node"');
    expect(out).toContain("Redis usage drain and quota reconciliation are skipped");
    expect(out).not.toContain("job pass failed");
  }, 90_000);
});

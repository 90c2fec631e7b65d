/**
 * `npm run demo` on a machine with no Redis at all: no REDIS_URL and no `redis-server` on PATH (the
 * test hides it behind a PATH of links to every other program). The demo says it starts in
 * single-node mode, the printed login works, the printed curl gets a decision from the in-process
 * store, and a publish from the admin API (no Redis to write) reaches the decision server.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { interruptDemo } from "./demo-process";

const ROOT = path.resolve(import.meta.dirname, "..");

test.describe.configure({ timeout: 300_000 });

/** A directory of links to every program on PATH but redis-*, to stand for a machine without Redis. */
function pathWithoutRedis(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-no-redis-bin-"));
  for (const entry of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!entry || !fs.existsSync(entry)) continue;
    for (const name of fs.readdirSync(entry)) {
      if (name.startsWith("redis-") || fs.existsSync(path.join(dir, name))) continue;
      fs.symlinkSync(path.join(entry, name), path.join(dir, name));
    }
  }
  return dir;
}

test("npm run demo without Redis: single-node mode, the printed login and curl work, a publish is picked up", async ({ page }) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-demo-sn-"));
  fs.chmodSync(dataDir, 0o755);
  const binDir = pathWithoutRedis();
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: binDir, SLUICE_DATA_DIR: dataDir, SLUICE_DEMO_TRAFFIC: "0" };
  for (const name of ["DATABASE_URL", "REDIS_URL", "REDIS_CLUSTER_NODES", "SLUICE_REDIS_PREFIX", "SLUICE_MODE", "PORT"]) delete env[name];
  const demo: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", "worker/demo.ts"], { cwd: ROOT, env, detached: true });
  let output = "";
  demo.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  demo.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => demo.once("exit", (code) => resolve(code)));

  try {
    await expect
      .poll(() => (demo.exitCode !== null ? `exited with ${demo.exitCode}:\n${output}` : output), { timeout: 240_000, intervals: [1_000] })
      .toContain("Sluice is running.");
    expect(output).toContain("no redis-server on PATH: starting in SINGLE-NODE mode");
    expect(output).toMatch(/Redis\s+none: SINGLE-NODE mode/);
    const controlUrl = /Control plane\s+(http:\/\/\S+)/.exec(output)?.[1];
    const password = /\(password: (\S+)\)/.exec(output)?.[1];
    const admin = /admin\s+(\S+@\S+)/.exec(output)?.[1];
    const decisionUrl = /Decision API\s+(http:\/\/\S+)/.exec(output)?.[1];
    const token = /service token: (\S+)\)/.exec(output)?.[1];
    expect(controlUrl && password && admin && decisionUrl && token).toBeTruthy();

    const ready = (await (await fetch(`${decisionUrl}/readyz`)).json()) as { mode: string; policyVersion: number };
    expect(ready).toMatchObject({ mode: "single-node" });
    const check = async () =>
      (await (
        await fetch(`${decisionUrl}/v1/check`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ key: "sk_test_acme_ci_0001", operation: "GET /v1/orders/42", ip: "203.0.113.7" }),
        })
      ).json()) as { allowed: boolean; tenant: string; policyVersion: number };
    expect(await check()).toMatchObject({ allowed: true, tenant: "acme", policyVersion: ready.policyVersion });

    // The control plane works without Redis: sign in, roll back to v1 from the policy page's API.
    await page.goto(`${controlUrl}/login`);
    await page.getByLabel("Email").fill(admin!);
    await page.getByLabel("Password").fill(password!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("current-role")).toHaveText("admin");
    const rollback = await page.request.post(`${controlUrl}/api/v1/policy/rollback`, { data: { version: 1 }, headers: { origin: controlUrl! } });
    expect(rollback.status(), await rollback.text()).toBe(200);
    const { version } = (await rollback.json()) as { version: number };
    expect(version).toBe(ready.policyVersion + 1);
    await expect.poll(async () => (await check()).policyVersion, { timeout: 5_000 }).toBe(version);
  } finally {
    const { code, survivors } = await interruptDemo(demo, exited);
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(binDir, { recursive: true, force: true });
    expect(code, `demo output:\n${output.slice(-3000)}`).toBe(0);
    expect(survivors, "processes the demo started that outlived it").toEqual([]);
  }
});

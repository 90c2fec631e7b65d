/**
 * Observability end to end: traffic through a real decision server, drained by the worker's rollup,
 * drawn on /dashboards; a policy change that raises 429s opens an alert naming that version; the
 * Billing page lists the month; product and sre get 403 on the export.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { spawnDecisionServer } from "../lib/processes/harness";
import { evaluateAlerts } from "../lib/jobs/alerts";
import { drainClosedMinutes } from "../lib/jobs/rollup";
import { createRedisClient } from "../lib/redis/client";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { shot, signIn } from "./fixtures";

const TOKEN = "svc_e2e_dashboards_0001";
const KEY = "sk_test_globex_ci_0001";

test("generated traffic shows on the dashboard, and a policy change that raises 429s raises an alert", async ({ page }) => {
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  // A lenient store budget: this test is about the dashboards, not failure modes (lib/decision/failure-modes.int.test.ts
  // pins 25 ms). Under CI load a 25 ms key lookup can time out; that decision is then degraded and
  // counted without a tenant, so the tenant page would show one decision fewer than the total.
  const server = await spawnDecisionServer(
    { REDIS_URL: E2E.redisUrl, SLUICE_REDIS_PREFIX: E2E.redisPrefix, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "200" },
    { waitReady: true },
  );
  const statuses: number[] = [];
  const send = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${server.url}/v1/check`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ key: KEY, operation: "GET /v1/products", ip: "203.0.113.9" }),
      });
      statuses.push(((await res.json()) as { status: number }).status);
    }
  };
  try {
    await send(30);
    // The policy change: pro's per-key limit drops from 1000 to 5 a minute.
    const file = readFileSync(path.resolve(import.meta.dirname, "../examples/demo-policy.yaml"), "utf8").replace(
      "{ operation: \"*\", scope: api_key, algorithm: sliding_window_counter, limit: 1000, window: 1m, precision: 6 }",
      "{ operation: \"*\", scope: api_key, algorithm: sliding_window_counter, limit: 5, window: 1m, precision: 6 }",
    );
    await applyPolicyFile(db, file, { actor: "e2e" });
    const published = await publishPolicy({ db, redis }, { actor: "e2e", note: "tighten pro" });
    const version = (published as { version?: number }).version;
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      const ready = (await (await fetch(`${server.url}/readyz`)).json()) as { policyVersion?: number };
      if (version === undefined || ready.policyVersion === version) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await send(40);
  } finally {
    await server.stop("SIGTERM"); // flushes the aggregates
  }
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(20);
  // The worker's passes, two minutes ahead so the current minute counts as closed.
  const nowMs = Date.now() + 120_000;
  await drainClosedMinutes({ db, redis }, { nowMs });
  const opened = await evaluateAlerts(db, { nowMs });
  expect(opened.some((a) => a.subject === "tenant:globex" && a.kind === "deny_share")).toBe(true);
  await db.$disconnect();
  redis.disconnect();

  // The dashboards leave out the running minute (its counts are not drained until it ends): look
  // once the last decision's minute is over.
  const lastMinuteEndMs = Math.floor(Date.now() / 60_000) * 60_000 + 60_000;
  await new Promise((r) => setTimeout(r, Math.max(0, lastMinuteEndMs - Date.now()) + 100));
  await signIn(page, "sre");
  await page.goto("/dashboards?range=1h");
  await expect(page.getByTestId("total-decisions")).toHaveText("70 decisions");
  await expect(page.getByTestId("chart-decisions")).toBeVisible();
  await expect(page.getByTestId("top-requests").getByRole("link", { name: "globex" }).first()).toBeVisible();
  const alert = page.getByTestId("alert").filter({ hasText: "429 share of tenant globex" });
  await expect(alert).toBeVisible();
  await expect(alert.getByRole("link", { name: /after policy v\d+ \(diff\)/ })).toBeVisible();
  await page.waitForTimeout(500);
  await shot(page, "dashboards-traffic");
  const download = page.waitForEvent("download");
  await page.getByTestId("csv-decisions").click();
  expect((await download).suggestedFilename()).toBe("decisions.csv");

  await page.goto("/dashboards/tenants/globex?range=1h");
  await expect(page.getByTestId("total-decisions")).toHaveText("70 decisions");
  await shot(page, "dashboards-tenant-globex");

  const period = new Date().toISOString().slice(0, 7);
  expect((await page.request.get(`/api/v1/billing/exports?period=${period}&format=csv`)).status()).toBe(403);
});

test("billing sees the month on the Billing page and downloads the export", async ({ page }) => {
  await signIn(page, "billing");
  const period = new Date().toISOString().slice(0, 7);
  const res = await page.request.get(`/api/v1/billing/exports?period=${period}&format=csv`);
  expect(res.status()).toBe(200);
  expect(res.headers()["x-sluice-billing-status"]).toBe("provisional");
  expect(await res.text()).toContain(",globex,Globex Corporation,");
  await page.goto("/billing");
  await expect(page.getByTestId(`period-${period}`)).toContainText("provisional");
  await expect(page.getByTestId("reconcile-ok").first()).toBeVisible();
  await shot(page, "billing");
});

test("product cannot download billing exports", async ({ page }) => {
  await signIn(page, "product");
  const period = new Date().toISOString().slice(0, 7);
  expect((await page.request.get(`/api/v1/billing/exports?period=${period}&format=json`)).status()).toBe(403);
});

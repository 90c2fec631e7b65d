/**
 * Issue #29, "every number the control plane shows is true", in a real browser at 1280 and 390 px:
 * - Billing: the month picker, the tenant filter (and its export, one tenant's lines only), the
 *   "as of" time, enforcement's counter differing from the export shown on the month with both
 *   numbers and what to do; a month before any usage is a message, and reading it writes nothing.
 * - Dashboards: denials named by reason in words; the 429 share counts 429s only (a suspended
 *   tenant's 403s and unknown keys' 401s are not in it); a custom time range.
 * Usage is recorded through the decision servers' recorder and drained by the worker's rollup.
 * Screenshots: docs/screenshots/numbers-billing-<width>.png, numbers-dashboards-<width>.png.
 */
import { expect, test } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { recordJobRun } from "../lib/db/job-runs";
import { drainClosedMinutes } from "../lib/jobs/rollup";
import { createRedisClient } from "../lib/redis/client";
import { UsageRecorder } from "../lib/redis/usage";
import { docShot, signIn } from "./fixtures";

const WIDTHS = [1280, 390] as const;
const MONTH = new Date().toISOString().slice(0, 7);
/**
 * The minute the usage is recorded in: 50 minutes ago, inside "last hour" but long before any other
 * spec's traffic (the e2e database is fresh per run and specs run one at a time), so a custom range
 * of exactly this minute holds these decisions and no others. It stays in the current UTC month.
 */
const SEEDED_MINUTE_MS = Math.max(Math.floor(Date.now() / 60_000) * 60_000 - 50 * 60_000, Date.parse(`${MONTH}-01T00:00:00Z`));

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    // In SEEDED_MINUTE_MS: acme 30 allowed and 20 rate limited; initech suspended (25 × 403); 8 unknown keys (401).
    const atMs = SEEDED_MINUTE_MS;
    const recorder = new UsageRecorder(redis, E2E.redisPrefix);
    const record = (tenant: string | null, tier: string | null, n: number, reason: "rate_limited" | "tenant_suspended" | "unknown_key" | null) => {
      for (let i = 0; i < n; i++) {
        recorder.record({ atMs: atMs + i, tenant, tier, operation: tenant ? "GET /v1/orders/:id" : null, outcome: reason ? "denied" : "allowed", keyPrefix: null, latencyMs: 1, deniedReason: reason });
      }
    };
    record("acme", "free", 30, null);
    record("acme", "free", 20, "rate_limited");
    record("initech", "free", 25, "tenant_suspended");
    record(null, null, 8, "unknown_key");
    await recorder.flush();
    await drainClosedMinutes({ db, redis, prefix: E2E.redisPrefix }, { nowMs: Date.now() + 60_000 });
    // The worker's last reconciliation found acme's month quota counter ahead of its usage.
    const live = (await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } })).document as { tiers: Record<string, { quotas: { id: string; operation: string; period: string }[] }> };
    const quota = live.tiers.free!.quotas.find((q) => q.operation === "*" && q.period === "month")!;
    await recordJobRun(db, "reconcile", { nowMs: Date.now(), result: { checked: 12, differences: [{ tenant: "acme", quotaId: quota.id, period: MONTH, redis: 1_005, expected: 907, degraded: 0 }] } });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
});

for (const width of WIDTHS) {
  test(`billing: month picker, tenant filter and its export, as-of time, drift on the month (${width} px)`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    await signIn(page, "billing");
    await page.goto("/billing");
    await expect(page.getByTestId("month-picker")).toHaveValue(MONTH);
    await expect(page.getByTestId("as-of")).toContainText("As of");
    const drift = page.getByTestId("drift-notice");
    await expect(drift).toContainText("counter 1,005 units, export 907 units (+98)");
    await expect(drift).toContainText("What to do:");
    await expect(page.getByTestId("billing-tenant-acme")).toContainText("enforcement’s counter differs");

    await page.getByTestId("tenant-filter").selectOption("acme");
    await page.getByRole("button", { name: "Show" }).click();
    await expect(page).toHaveURL(/tenant=acme/);
    const lines = page.getByTestId("billing-lines").locator("tbody tr");
    await expect(lines.first()).toContainText("acme");
    for (const text of await lines.allInnerTexts()) expect(text).toContain("acme");
    const csvHref = await page.getByTestId("period-downloads").getByRole("link", { name: "CSV", exact: true }).getAttribute("href");
    expect(csvHref).toContain("tenant=acme");
    const csv = await (await page.request.get(csvHref!)).text();
    const rows = csv.trim().split("\r\n").slice(1);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.split(",")[4] === "acme")).toBe(true);
    await docShot(page, `numbers-billing-${width}`);
  });

  test(`billing: a month before any usage is a message, and reading it writes nothing (${width} px)`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    const db = createDb(E2E.databaseUrl);
    try {
      const before = await db.billingPeriod.count();
      await signIn(page, "billing");
      await page.goto("/billing?period=1999-01");
      await expect(page.getByTestId("period-error")).toContainText("billing period 1999-01 is before any usage");
      const res = await page.request.get("/api/v1/billing/exports?period=1999-01&format=csv");
      expect(res.status()).toBe(404);
      expect(await db.billingPeriod.count()).toBe(before);
      expect(await db.billingPeriod.findUnique({ where: { period: "1999-01" } })).toBeNull();
    } finally {
      await db.$disconnect();
    }
  });

  test(`dashboards: denials by reason in words, the 429 share counts 429s only (${width} px)`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    await signIn(page, "sre");
    // The last hour holds these decisions and those of the specs before this one: every reason is named.
    await page.goto("/dashboards?range=1h");
    const reasons = page.getByTestId("denials-by-reason");
    await expect(reasons).toContainText(/\d+ rate limited \(429\)/);
    await expect(reasons).toContainText(/\d+ tenant suspended \(403\)/);
    await expect(reasons).toContainText(/\d+ unknown or missing key \(401\)/);
    // A custom range (UTC) of exactly the recorded minute: only this spec's 83 decisions, by the minute.
    const utc = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    await page.goto(`/dashboards?from=${utc(SEEDED_MINUTE_MS)}&to=${utc(SEEDED_MINUTE_MS + 60_000)}`);
    await expect(page.getByTestId("range-note")).toContainText("by the minute");
    await expect(page.getByTestId("custom-range").locator('input[name="from"]')).toHaveValue(utc(SEEDED_MINUTE_MS));
    await expect(page.getByTestId("total-decisions")).toHaveText("83 decisions");
    const minute = page.getByTestId("denials-by-reason");
    await expect(minute).toContainText("20 rate limited (429)");
    await expect(minute).toContainText("25 tenant suspended (403)");
    await expect(minute).toContainText("8 unknown or missing key (401)");
    // The 429 share is 20 of 83 (24.1%), never the 53 denials' share (63.9%).
    await expect(page.getByTestId("total-deny-share")).toContainText("24.1%");
    await docShot(page, `numbers-dashboards-${width}`);
  });
}

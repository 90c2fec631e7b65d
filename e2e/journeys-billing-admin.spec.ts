/**
 * Two jobs finished in a real browser, at 1280 px and at 390 px (issue #18):
 * - billing: the month's totals on the page (per tenant, in units, reconciled), then the export
 *   file with its column dictionary;
 * - admin: a user's role changed, confirmed first, then found in the audit log by the user's email,
 *   with only the changed field shown.
 * Traffic goes through a real decision server (cost-2 orders included) and the worker's rollup.
 * Screenshots: docs/screenshots/journey-billing-<width>.png, journey-admin-<width>.png.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { spawnDecisionServer } from "../lib/processes/harness";
import { drainClosedMinutes } from "../lib/jobs/rollup";
import { createRedisClient } from "../lib/redis/client";
import { signIn } from "./fixtures";

const TOKEN = "svc_e2e_journeys_0001";
const KEY = "sk_test_globex_ci_0001";
const WIDTHS = [1280, 390] as const;
const sent = { orders: 0, search: 0 };
/** Globex's all-operations monthly quota usage (units) before and after this spec's traffic. */
const globexUsed = { before: 0, after: 0 };

async function globexMonthUsed(db: ReturnType<typeof createDb>): Promise<number> {
  const rows = await db.quotaUsage.findMany({ where: { tenant: "globex", period: new Date().toISOString().slice(0, 7) } });
  return rows.reduce((s, r) => s + Number(r.used), 0);
}

async function docShot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.resolve(import.meta.dirname, `../docs/screenshots/${name}.png`), fullPage: true });
}

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  globexUsed.before = await globexMonthUsed(db);
  const server = await spawnDecisionServer({ REDIS_URL: E2E.redisUrl, SLUICE_REDIS_PREFIX: E2E.redisPrefix, SLUICE_SERVICE_TOKENS: TOKEN }, { waitReady: true });
  const check = async (operation: string) => {
    const res = await fetch(`${server.url}/v1/check`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ key: KEY, operation, ip: "203.0.113.7" }),
    });
    return ((await res.json()) as { allowed: boolean }).allowed;
  };
  try {
    // Earlier specs' traffic may have left globex over a per-minute limit: a denied request costs
    // nothing, so keep asking (for at most a minute and a bit) until 3 orders and 4 searches passed.
    const deadline = Date.now() + 75_000;
    while ((sent.orders < 3 || sent.search < 4) && Date.now() < deadline) {
      if (sent.orders < 3 && (await check("POST /v1/orders"))) sent.orders++;
      if (sent.search < 4 && (await check("GET /v1/search"))) sent.search++;
      if (sent.orders < 3 || sent.search < 4) await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await server.stop("SIGTERM");
  }
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  await drainClosedMinutes({ db, redis }, { nowMs: Date.now() + 120_000 });
  globexUsed.after = await globexMonthUsed(db);
  await db.$disconnect();
  redis.disconnect();
});

for (const width of WIDTHS) {
  test(`billing: the month's totals on screen, then the export with its dictionary (${width} px)`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    await signIn(page, "billing");
    if (width < 768) {
      await page.getByRole("button", { name: "Menu" }).click();
    }
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Billing" }).click();
    const period = new Date().toISOString().slice(0, 7);
    await expect(page.getByRole("heading", { name: `${period} · provisional` })).toBeVisible();
    await expect(page.getByTestId("period-status")).toContainText("closes it at");
    // Globex's total in units: 2 per order (cost 2), 1 per search.
    expect(sent).toEqual({ orders: 3, search: 4 });
    expect(globexUsed.after - globexUsed.before).toBe(sent.orders * 2 + sent.search);
    const units = globexUsed.after;
    const row = page.getByTestId("billing-tenant-globex");
    await expect(row.locator("td").nth(2)).toHaveText(units.toLocaleString("en-US"));
    await expect(row).toContainText("= export");
    await expect(page.getByTestId("billing-lines")).toContainText("all operations · 2,000,000 units per month · overage billed");
    await expect(page.getByTestId("billing-lines")).toContainText("tenant override");
    await expect(page.getByTestId("billing-dictionary")).toContainText("BY THIS QUOTA only");
    await docShot(page, `journey-billing-${width}`);

    // The export file: the same figure, and its dictionary.
    const download = page.waitForEvent("download");
    await page.getByTestId("period-downloads").getByRole("link", { name: "CSV", exact: true }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe(`sluice-billing-${period}-provisional.csv`);
    const csv = readFileSync((await file.path())!, "utf8");
    const header = csv.split("\r\n")[0]!.split(",");
    const globex = csv.split("\r\n").find((l) => l.includes(",globex,") && l.includes(",*,month,"))!.split(",");
    expect(Number(globex[header.indexOf("used")])).toBe(units);
    const res = await page.request.get(`/api/v1/billing/exports?period=${period}&format=csv`);
    expect(res.headers()["link"]).toBe('</api/v1/billing/dictionary?format=csv>; rel="describedby"');
    expect(Date.parse(res.headers()["x-sluice-exported-at"]!)).toBeGreaterThan(Date.now() - 60_000);
    const dictionary = await (await page.request.get("/api/v1/billing/dictionary?format=csv")).text();
    for (const column of header) expect(dictionary, column).toContain(`\r\n${column},`);
    const json = (await (await page.request.get(`/api/v1/billing/exports?period=${period}&format=json`)).json()) as { dictionary: Record<string, { unit: string }> };
    expect(json.dictionary.used!.unit).toBe("units");
  });

  test(`admin: a user's role change, confirmed, found in the audit log by name (${width} px)`, async ({ page }) => {
    await page.setViewportSize({ width, height: 900 });
    const email = `journey-${width}@sluice.test`;
    await signIn(page, "admin");
    await page.goto("/settings");
    await page.getByLabel("Email", { exact: true }).fill(email);
    await page.getByLabel("Initial password (10+ characters)").fill("journey-password-1");
    await page.getByRole("button", { name: "Create user" }).click();
    const select = page.getByLabel(`Role of ${email}`);
    await expect(select).toHaveValue("product");
    await select.selectOption("billing");
    // Nothing changes until it is confirmed.
    const confirm = page.getByTestId(`confirm-role-${email}`);
    await expect(confirm).toContainText(`Change ${email} from product to billing?`);
    await docShot(page, `journey-admin-confirm-${width}`);
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await expect(select).toHaveValue("product");
    await select.selectOption("billing");
    await confirm.getByRole("button", { name: "Confirm" }).click();
    await expect(page.getByRole("status").filter({ hasText: `${email} is now billing.` })).toBeVisible();

    await page.goto("/audit");
    const search = page.getByRole("searchbox", { name: "Search", exact: true });
    await search.fill(email);
    await search.press("Enter");
    const row = page.getByTestId("audit-table").locator("tbody tr").filter({ hasText: "user.set_role" });
    await expect(row).toHaveCount(1);
    await expect(row.getByTestId("audit-entity-name")).toHaveText(email);
    await expect(row.getByTestId("audit-changes")).toHaveText('role: "product" → "billing"');
    await docShot(page, `journey-admin-audit-${width}`);
  });
}

/**
 * The customer portal (issue #26): a signed link from `sluice portal-link` opens, without any
 * control-plane login, a page of one tenant's quotas and limits from the counters that decide; it
 * renders at 1280 and 390 px, shows nothing of another tenant, is refused when changed or forged,
 * and stops working when it expires. Also the tenant page's billing section, at both widths.
 * Screenshots: docs/screenshots/portal-<width>.png, tenant-billing-<width>.png.
 */
import { expect, test } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { usageReadPlan } from "../lib/policy/tenant-usage-answer";
import { createRedisClient } from "../lib/redis/client";
import { readLivePolicy } from "../lib/services/policy/draft-view";
import { createPortalLink } from "../lib/services/billing/portal-link";
import { docShot, signIn } from "./fixtures";

const WIDTHS = [1280, 390] as const;
/** The control plane's secret (playwright.config.ts): links signed here verify there. */
const SECRET = "e2e-only-secret-not-for-production-0123456789";

const db = createDb(E2E.databaseUrl);
let link = "";

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  process.env.NEXTAUTH_SECRET = SECRET;
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  // 85 % of acme's monthly quota on the counter the decision servers count into.
  const live = await readLivePolicy(db);
  const plan = usageReadPlan(live!, "acme", Date.now(), E2E.redisPrefix)!;
  const month = plan.quotas.find((q) => q.quota.period === "month" && q.quota.operation === "*")!;
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    await redis.set(month.counterKey, String(Math.round(month.quota.limit * 0.85)));
  } finally {
    redis.disconnect();
  }
  link = (await createPortalLink(db, { tenant: "acme", ttl: "1h", baseUrl: "http://127.0.0.1" }, Date.now())).url;
});

test.afterAll(async () => {
  await db.$disconnect();
});

const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

test("the portal link renders one tenant's quotas at 1280 and 390 px without a login", async ({ page }) => {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    const res = await page.goto(pathOf(link));
    expect(res?.status()).toBe(200);
    expect(new URL(page.url()).pathname).toBe("/portal/acme"); // not sent to /login
    await expect(page.getByTestId("portal-tenant")).toHaveText("acme");
    const month = page.getByTestId("portal-quota").filter({ hasText: "All requests" });
    await expect(month.getByTestId("portal-used")).toHaveText("8,500");
    await expect(month.getByTestId("portal-remaining")).toHaveText("1,500");
    await expect(month).toContainText("80% ✓");
    const body = await page.locator("body").innerText();
    expect(body).not.toMatch(/globex|initech|umbrella/i);
    // Readable at 390 px: nothing wider than the viewport.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await docShot(page, `portal-${width}`);
  }
});

test("a changed or forged link is refused and shows nothing", async ({ page }) => {
  const u = new URL(link);
  const other = `/portal/globex${u.search}`;
  const forged = `${u.pathname}?exp=${Number(u.searchParams.get("exp")) + 3600}&sig=${u.searchParams.get("sig")}`;
  const garbage = `${u.pathname}?exp=1&sig=${"A".repeat(43)}`;
  for (const p of [other, forged, garbage, u.pathname]) {
    expect((await page.goto(p))?.status()).toBe(403);
    await expect(page.getByTestId("portal-refused")).toContainText("This link is not valid.");
    await expect(page.getByTestId("portal-quota")).toHaveCount(0);
  }
});

test("the same link stops working when it expires", async ({ page }) => {
  // A one-minute link made 56 s ago: it works for a few seconds more.
  const short = (await createPortalLink(db, { tenant: "acme", ttl: "1m", baseUrl: "http://127.0.0.1" }, Date.now() - 56_000)).url;
  await page.goto(pathOf(short));
  await expect(page.getByTestId("portal-tenant")).toHaveText("acme");
  await page.waitForTimeout(Math.max(0, Number(new URL(short).searchParams.get("exp")) * 1000 - Date.now() + 500));
  expect((await page.reload())?.status()).toBe(403);
  await expect(page.getByTestId("portal-refused")).toContainText("This link has expired.");
  await expect(page.getByTestId("portal-quota")).toHaveCount(0);
});

test("the tenant page sets billing and shows notifications, at 1280 and 390 px", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/tenants/initech");
  await page.getByLabel("Billing anchor").fill("2026-01-31");
  await page.getByLabel("Time zone (IANA)").fill("Mars/Olympus");
  await page.getByRole("button", { name: "Save billing" }).click();
  const section = page.getByTestId("tenant-billing");
  await expect(section.getByRole("alert")).toContainText("tenant initech: unknown time zone");
  await page.getByLabel("Time zone (IANA)").fill("America/Los_Angeles");
  await expect(page.getByTestId("billing-preview")).toContainText("With this anchor the period now would be");
  await page.getByRole("button", { name: "Save billing" }).click();
  await expect(section.getByRole("status")).toContainText("Billing saved to the draft");
  await page.reload();
  await expect(page.getByTestId("tenant-billing")).toContainText("Month quotas run from day 31 at 00:00 America/Los_Angeles");
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    await page.getByTestId("tenant-billing").scrollIntoViewIfNeeded();
    await docShot(page, `tenant-billing-${width}`);
  }
  const row = await db.tenant.findUniqueOrThrow({ where: { slug: "initech" } });
  expect(row).toMatchObject({ billingAnchor: "2026-01-31", billingTimeZone: "America/Los_Angeles" });
  // Back to the UTC calendar month, so the draft equals live again for the specs after this one.
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.getByRole("button", { name: "UTC calendar month" }).click();
  await expect(page.getByTestId("tenant-billing").getByRole("status")).toContainText("Billing saved to the draft");
  expect((await db.tenant.findUniqueOrThrow({ where: { slug: "initech" } })).billingAnchor).toBeNull();
});

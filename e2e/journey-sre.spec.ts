/**
 * Issue 18's SRE journey, in a real browser at 1280 px and at 390 px: traffic through a real
 * decision server makes a tenant's 429 share jump, the worker's rollup and alert jobs open an alert,
 * the SRE follows it to the change of the policy version published before it, acknowledges it, and
 * applies a failure-mode change to the live policy on their own (a version that changes only
 * failure modes; a product manager's pending draft change stays unpublished).
 * Screenshots go to docs/screenshots/journey-sre-<width>-<step>.png.
 */
import { expect, test, type Page } from "@playwright/test";
import { E2E } from "../playwright.config";
import { signIn } from "./fixtures";

test.describe.configure({ mode: "serial" });

const SERVICE_TOKEN = "sl_svc_e2e_journey_sre_0123456789";

const VIEWPORTS = [
  { width: 1280, height: 900, tenant: "soylent", key: "sk_test_soylent_ci_0001", ip: "198.51.100.4", mode: "closed", pending: { tenant: "oscorp", from: "enterprise" } },
  { width: 390, height: 844, tenant: "cyberdyne", key: "sk_test_cyberdyne_ci_0001", ip: "198.51.100.5", mode: "open", pending: { tenant: "umbrella", from: "enterprise" } },
] as const;

/** Real traffic for `key` until its limit denies, then the worker's jobs (rollup, alerts) on it. */
async function makeAlert(key: string, ip: string): Promise<void> {
  const { spawnDecisionServer } = await import("../lib/processes/harness");
  const { createDb } = await import("../lib/db/client");
  const { createRedisClient } = await import("../lib/redis/client");
  const { drainClosedMinutes } = await import("../lib/jobs/rollup");
  const { evaluateAlerts } = await import("../lib/jobs/alerts");
  const server = await spawnDecisionServer(
    { REDIS_URL: E2E.redisUrl, SLUICE_REDIS_PREFIX: E2E.redisPrefix, SLUICE_SERVICE_TOKENS: SERVICE_TOKEN, POLICY_POLL_MS: "500", DATABASE_URL: E2E.databaseUrl },
    { waitReady: true },
  );
  let denied = 0;
  try {
    // Free: 100 per minute per key (and 10 in flight per tenant). Keep going until most are denied.
    for (let round = 0; round < 12 && denied < 300; round++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          fetch(`${server.url}/v1/check`, {
            method: "POST",
            headers: { authorization: `Bearer ${SERVICE_TOKEN}`, "content-type": "application/json" },
            body: JSON.stringify({ key, operation: "GET /v1/orders/42", ip }),
          }).then((r) => r.json() as Promise<{ allowed: boolean }>),
        ),
      );
      denied += answers.filter((a) => !a.allowed).length;
    }
    // The decision server flushes usage to Redis every second.
    await new Promise((r) => setTimeout(r, 2_500));
  } finally {
    await server.stop();
  }
  expect(denied).toBeGreaterThan(0);
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    // Close the current minute as the worker would a minute later, then evaluate.
    const later = Date.now() + 2 * 60_000;
    await drainClosedMinutes({ db, redis, prefix: E2E.redisPrefix }, { nowMs: later + 60_000 });
    await evaluateAlerts(db, { nowMs: later });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
}

for (const vp of VIEWPORTS) {
  test.describe(`at ${vp.width} px`, () => {
    test.use({ viewport: { width: vp.width, height: vp.height } });
    const shot = (page: Page, step: string) => page.screenshot({ path: `docs/screenshots/journey-sre-${vp.width}-${step}.png`, fullPage: true });

    test("an SRE follows an alert to the version's change and applies a failure mode live", async ({ page }) => {
      test.setTimeout(300_000);
      await makeAlert(vp.key, vp.ip);

      // A product manager has a change pending in the draft.
      await signIn(page, "product");
      await page.goto(`/tenants/${vp.pending.tenant}`);
      await page.getByLabel("Tier").selectOption("pro");
      await page.getByRole("button", { name: "Move to tier" }).click();
      await expect(page.getByRole("status").filter({ hasText: `Moved ${vp.pending.tenant} to pro` })).toBeVisible();
      await page.context().clearCookies();

      await signIn(page, "sre");
      await page.goto("/");
      const alert = page.getByTestId("alert").filter({ hasText: `tenant ${vp.tenant}` }).filter({ hasText: "firing" });
      await expect(alert).toBeVisible();
      await alert.getByRole("button", { name: "Acknowledge" }).click();
      await expect(page.getByTestId("alert").filter({ hasText: `tenant ${vp.tenant}` }).getByTestId("alert-acknowledged")).toContainText("sre@sluice.test");
      await shot(page, "1-alert");

      // The alert names the version published before it; its link opens that version's own change.
      const link = page.getByTestId("alert").filter({ hasText: `tenant ${vp.tenant}` }).getByTestId("alert-version-link");
      const version = Number(/v(\d+)/.exec((await link.textContent()) ?? "")?.[1]);
      await link.click();
      await expect(page).toHaveURL(new RegExp(`/policy\\?version=${version}$`));
      await expect(page.getByRole("heading", { name: `What v${version} changed` })).toBeVisible();
      await expect(page.getByTestId("version-diff").or(page.getByText("This version's document equals the one before it."))).toBeVisible();
      await shot(page, "2-version-diff");

      // Failure modes on one page, applied to the live policy at once.
      await page.goto("/operations");
      const panel = page.getByTestId("failure-modes");
      const before = await panel.getByLabel("Failure mode of search").inputValue();
      const target = before === vp.mode ? "" : vp.mode;
      await panel.getByLabel("Failure mode of search").selectOption(target);
      await panel.getByRole("button", { name: "Apply to live…" }).click();
      await panel.getByRole("button", { name: "Confirm: apply live" }).click();
      const result = page.getByTestId("failure-modes-result");
      await expect(result).toContainText(/^Live: v\d+ changes only failure modes \(search /);
      const applied = Number(/v(\d+)/.exec((await result.textContent()) ?? "")?.[1]);
      await shot(page, "3-failure-mode-applied");

      // The new version changed only that failure mode; the product manager's tier move is still a draft change.
      await page.goto(`/policy?version=${applied}`);
      const diff = page.getByTestId("version-diff");
      await expect(diff).toContainText("Operation search: failureMode");
      await expect(diff).not.toContainText(vp.pending.tenant);
      await expect(page.getByTestId("policy-diff")).toContainText(`Tenant ${vp.pending.tenant}: tier ${vp.pending.from} → pro`);
      await shot(page, "4-applied-version");
    });
  });
}

/**
 * Issue 18's product-manager journey, in a real browser at 1280 px and at 390 px: a new tier, a
 * tenant moved onto it (the draft visibly differs from live), an override, the simulator, the diff,
 * publish, a decision server enforcing it, and a rollback that visibly resets the draft too.
 * Screenshots go to docs/screenshots/journey-pm-<width>-<step>.png.
 */
import { expect, test, type Page } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createTierInUi, signIn } from "./fixtures";

test.describe.configure({ mode: "serial" });

const SERVICE_TOKEN = "sl_svc_e2e_journey_pm_0123456789";

const VIEWPORTS = [
  { width: 1280, height: 900, tenant: "wonka" },
  { width: 390, height: 844, tenant: "cyberdyne" },
] as const;

for (const vp of VIEWPORTS) {
  test.describe(`at ${vp.width} px`, () => {
    test.use({ viewport: { width: vp.width, height: vp.height } });
    const tier = `journey-${vp.width}`;
    const shot = (page: Page, step: string) => page.screenshot({ path: `docs/screenshots/journey-pm-${vp.width}-${step}.png`, fullPage: true });

    test("a product manager ships a tier change, the decision server enforces it, and a rollback resets live and draft", async ({ page }) => {
      test.setTimeout(300_000);
      await signIn(page, "product");

      // 1. A new tier: 3 requests per minute per API key.
      await createTierInUi(page, tier);
      await expect(page.getByTestId("draft-badge-count")).toHaveText(/^\d+ unpublished changes?$/);

      // 2. The tenant moved: the list shows live and draft tiers side by side.
      await page.goto(`/tenants/${vp.tenant}`);
      await page.getByLabel("Tier").selectOption(tier);
      await page.getByRole("button", { name: "Move to tier" }).click();
      await expect(page.getByRole("status").filter({ hasText: `Moved ${vp.tenant} to ${tier}` })).toBeVisible();
      await page.getByLabel("New key name (optional)").fill("journey");
      await page.getByRole("button", { name: "Create API key" }).click();
      const apiKey = ((await page.getByTestId("secret-value").textContent()) ?? "").trim();
      expect(apiKey).toMatch(/^sk_live_/);

      // 3. An override: this tenant gets 5 per minute per key instead of the tier's 3.
      await page.getByRole("button", { name: "+ Add override" }).click();
      await page.getByLabel("Limit", { exact: true }).fill("5");
      await page.getByRole("button", { name: "Add override" }).click();
      await expect(page.getByRole("status").filter({ hasText: /override/i }).first()).toBeVisible();
      await shot(page, "1-tenant");

      await page.goto(`/tenants?q=${vp.tenant}`);
      const row = page.getByTestId("tenants-table").getByRole("row").filter({ hasText: vp.tenant });
      await expect(row.getByTestId("live-draft").first()).toContainText("live");
      await expect(row.getByTestId("live-draft").first()).toContainText(tier);
      await shot(page, "2-tenants-live-draft");

      // 4. The simulator: the override's 5 per minute, draft against live.
      await page.goto(`/simulator?tenant=${vp.tenant}`);
      await page.getByLabel("A tenant").check();
      await page.getByLabel("Steady rate (requests/s)").fill("5");
      await page.getByLabel("Duration (s)").fill("60");
      await page.getByRole("button", { name: "Run simulation" }).click();
      const draft = page.getByTestId("sim-chart-draft");
      await expect(draft).toBeVisible({ timeout: 60_000 });
      await expect(draft.getByTestId("sim-allowed")).toHaveText("5");
      await shot(page, "3-simulator");

      // 5. The diff, in values; publish.
      await page.goto("/policy");
      const diff = page.getByTestId("policy-diff");
      await expect(diff).toContainText(`Tier ${tier} added`);
      await expect(diff).toContainText(`Tenant ${vp.tenant}: tier free → ${tier}`);
      await expect(diff).toContainText(`Tenant ${vp.tenant}: override of * per api_key — sliding_window_counter 5 per 1m`);
      await shot(page, "4-diff");
      await page.getByRole("button", { name: /^Publish \d+ changes?…$/ }).click();
      await page.getByLabel("Note (optional)").fill(`journey ${vp.width}`);
      await page.getByRole("button", { name: "Confirm publish" }).click();
      await expect(page.getByTestId("publish-result")).toHaveText(/^Published version \d+\.$/);
      const published = Number(/(\d+)/.exec((await page.getByTestId("publish-result").textContent()) ?? "")?.[1]);
      await page.reload();
      await expect(page.getByTestId("draft-badge")).toHaveCount(0);

      // 6. The decision server enforces it: 5 per minute for this key, then 429.
      const { spawnDecisionServer } = await import("../lib/processes/harness");
      const server = await spawnDecisionServer(
        { REDIS_URL: E2E.redisUrl, SLUICE_REDIS_PREFIX: E2E.redisPrefix, SLUICE_SERVICE_TOKENS: SERVICE_TOKEN, POLICY_POLL_MS: "500", DATABASE_URL: E2E.databaseUrl },
        { waitReady: true },
      );
      const check = async () => {
        const res = await fetch(`${server.url}/v1/check`, {
          method: "POST",
          headers: { authorization: `Bearer ${SERVICE_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ key: apiKey, operation: "GET /v1/orders/42", ip: "203.0.113.9" }),
        });
        expect(res.status).toBe(200);
        return (await res.json()) as { allowed: boolean; status: number; tier: string; policyVersion: number };
      };
      try {
        await expect.poll(async () => (await check()).policyVersion, { timeout: 20_000 }).toBe(published);
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) statuses.push((await check()).status);
        // The poll above spent one or more of the 5; the rest pass and then the override's limit denies.
        expect(statuses).toContain(429);
        expect((await check()).tier).toBe(tier);

        // 7. Roll back: live and draft both end at the version before.
        await page.goto("/policy");
        page.once("dialog", (d) => void d.accept());
        await page.getByRole("button", { name: `Roll back to v${published - 1}` }).click();
        await expect(page.getByRole("status").filter({ hasText: "The draft was reset to it" })).toBeVisible();
        await page.reload();
        await expect(page.getByTestId("draft-badge")).toHaveCount(0);
        await expect(page.getByText("The draft equals the live policy")).toBeVisible();
        await expect(page.getByRole("button", { name: "Nothing to publish" })).toBeDisabled();
        await shot(page, "5-after-rollback");
        await page.goto(`/tenants?q=${vp.tenant}`);
        await expect(page.getByTestId("tenants-table").getByRole("row").filter({ hasText: vp.tenant }).getByTestId("live-draft")).toHaveCount(0);
        await expect.poll(async () => (await check()).tier, { timeout: 20_000 }).toBe("free");
      } finally {
        await server.stop();
      }
    });
  });
}

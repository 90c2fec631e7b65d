/** A screenshot of every page as an admin sees it at 1280 px (kept under e2e/screenshots/). */
import { expect, test } from "@playwright/test";
import { shot, signIn } from "./fixtures";

const PAGES: [string, string][] = [
  ["/", "overview"],
  ["/tenants", "tenants"],
  ["/tenants?status=suspended", "tenants-suspended"],
  ["/tenants/globex", "tenant-globex"],
  ["/tiers", "tiers"],
  ["/tiers?tier=pro", "tiers-pro"],
  ["/operations", "operations"],
  ["/policy", "policy-admin"],
  ["/simulator", "simulator-empty"],
  ["/dashboards", "dashboards"],
  ["/billing", "billing"],
  ["/audit", "audit"],
  ["/settings", "settings"],
];

test("every page renders for an admin, without a server error", async ({ page }) => {
  await signIn(page, "admin");
  for (const [path, name] of PAGES) {
    const res = await page.goto(path);
    expect(res?.status(), path).toBeLessThan(400);
    await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
    if (path === "/tiers") await page.getByRole("button", { name: /^Edit \* api_key/ }).first().click();
    await shot(page, name);
  }
});

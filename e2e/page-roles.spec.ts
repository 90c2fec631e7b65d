/**
 * The role table and the pages agree (issue 18 job 2): every page of lib/auth/pages.ts × every
 * role, signed in for real. What each role may open is computed from the table itself (PAGES and
 * lib/auth/permissions.ts), never a hand-copied list: a page that answers "Not allowed" to a role
 * the table lets in, or opens for one it does not, fails here, as does a menu listing a page the
 * role cannot open.
 */
import { expect, test } from "@playwright/test";
import { PAGES } from "../lib/auth/pages";
import { can } from "../lib/auth/permissions";
import { ROLES } from "../lib/policy/types";
import { signIn } from "./fixtures";

for (const role of ROLES) {
  test(`the ${role} role opens exactly the pages the role table grants it, and the menu lists those`, async ({ page }) => {
    test.setTimeout(180_000);
    await signIn(page, role);
    const nav = page.getByRole("navigation", { name: "Main" });
    const expected = PAGES.filter((p) => can(role, p.action)).map((p) => p.label);
    await expect(nav.getByRole("link")).toHaveText(expected);
    for (const p of PAGES) {
      const allowed = can(role, p.action);
      const res = await page.goto(p.href);
      expect(res?.status(), `${role} ${p.href}`).toBe(200);
      await expect(page.getByRole("heading", { level: 1 }).first(), `${role} ${p.href}`).toBeVisible();
      await expect(page.getByTestId("forbidden"), `${role} ${p.href} (${p.action}: ${allowed ? "granted" : "not granted"})`).toHaveCount(allowed ? 0 : 1);
    }
  });
}

test("the product role reads usage: Dashboards and Billing open, billing downloads need the billing role", async ({ page }) => {
  await signIn(page, "product");
  await page.goto("/dashboards");
  await expect(page.getByTestId("usage-panels")).toBeVisible();
  await page.goto("/billing");
  await expect(page.getByTestId("export-not-allowed")).toBeVisible();
  const res = await page.request.get("/api/v1/billing/exports?period=2026-12&format=json");
  expect(res.status()).toBe(403);
});

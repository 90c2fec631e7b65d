/**
 * Every page on a phone-sized screen (390 px, an SRE on call) and on a laptop (1280 px): nothing
 * wider than the screen (wide tables scroll inside their own box), the navigation behind a menu
 * button that says whether it is open, charts drawn at the width of the screen. Screenshots of each
 * page at both widths go to e2e/screenshots/ (m-<page>.png and <page>-1280.png).
 */
import { expect, test } from "@playwright/test";
import { expectFits, shot, signIn } from "./fixtures";

const PAGES: [string, string][] = [
  ["/", "overview"],
  ["/tenants", "tenants"],
  ["/tenants/globex", "tenant-globex"],
  ["/tenants/no-such-tenant", "tenant-not-found"],
  ["/tiers", "tiers"],
  ["/tiers?tier=pro", "tiers-pro"],
  ["/operations", "operations"],
  ["/policy", "policy"],
  ["/envoy", "envoy"],
  ["/simulator", "simulator"],
  ["/nfr", "nfr"],
  ["/advisor", "advisor"],
  ["/dashboards?range=15m", "dashboards"],
  ["/dashboards/tenants/globex", "dashboards-tenant"],
  ["/billing", "billing"],
  ["/audit", "audit"],
  ["/settings", "settings"],
  ["/search?q=acme", "search"],
];

test("every page fits a 390 px screen, with the navigation behind a menu button", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, "admin");
  for (const [path, name] of PAGES) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
    const menu = page.getByRole("button", { name: "Menu" });
    await expect(menu).toHaveAttribute("aria-expanded", "false");
    await expect(page.getByRole("navigation", { name: "Main" })).toBeHidden();
    await expectFits(page, `${path} at 390 px`);
    if (path.startsWith("/dashboards")) {
      // Charts use the screen's width, not a sliver of it.
      const widths = await page.locator(".recharts-wrapper").evaluateAll((charts) => charts.map((c) => c.getBoundingClientRect().width));
      expect(widths.length, path).toBeGreaterThan(0);
      for (const w of widths) expect(w, path).toBeGreaterThan(300);
    }
    await shot(page, `m-${name}`);
  }
  // The menu opens and closes, and says so.
  const menu = page.getByRole("button", { name: "Menu" });
  await menu.click();
  await expect(menu).toHaveAttribute("aria-expanded", "true");
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("link", { name: "Dashboards" })).toBeVisible();
  await shot(page, "m-menu-open");
  await page.keyboard.press("Escape");
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await expect(menu).toBeFocused();
  await menu.click();
  await nav.getByRole("link", { name: "Billing" }).click();
  await expect(page).toHaveURL(/\/billing$/);
  await expect(menu).toHaveAttribute("aria-expanded", "false");
});

test("every page at 1280 px: the sidebar is always there and nothing is cut", async ({ page }) => {
  await signIn(page, "admin");
  for (const [path, name] of PAGES) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
    await expect(page.getByRole("button", { name: "Menu" })).toBeHidden();
    await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Settings" })).toBeVisible();
    await expectFits(page, `${path} at 1280 px`);
    await shot(page, `${name}-1280`);
  }
});

test("the first Tab offers a skip link to the page's content", async ({ page }) => {
  await signIn(page, "sre");
  await page.goto("/dashboards");
  await page.keyboard.press("Tab");
  const skip = page.getByRole("link", { name: "Skip to content" });
  await expect(skip).toBeFocused();
  await expect(skip).toBeInViewport();
  await page.keyboard.press("Enter");
  await expect(page.locator("main#main")).toBeFocused();
});

test("the navigation lists only the pages the role may open", async ({ page }) => {
  const expected = {
    billing: ["Overview", "Tenants", "Tiers", "Operations", "Policy", "Envoy", "Requirements", "Simulator", "Advisor", "Dashboards", "Billing", "Settings"],
    sre: ["Overview", "Tenants", "Tiers", "Operations", "Policy", "Envoy", "Requirements", "Simulator", "Advisor", "Dashboards", "Billing", "Audit", "Settings"],
  } as const;
  for (const role of ["billing", "sre"] as const) {
    await page.context().clearCookies();
    await signIn(page, role);
    const links = await page.getByRole("navigation", { name: "Main" }).getByRole("link").allInnerTexts();
    expect(links, role).toEqual(expected[role]);
    // Every page the menu offers opens without "Not allowed".
    for (const label of links) {
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: label, exact: true }).click();
      await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
      await expect(page.getByTestId("forbidden"), `${role} ${label}`).toHaveCount(0);
    }
  }
});

test("search finds tenants by name and keys by prefix; a missing tenant says so; an unknown range is an error", async ({ page }) => {
  await signIn(page, "product");
  const box = page.getByRole("searchbox", { name: "Search tenants and API keys" });
  await box.fill("Globex");
  await box.press("Enter");
  await expect(page.getByTestId("search-tenants").getByRole("link", { name: "Globex Corporation" })).toBeVisible();
  await page.goto("/tenants/globex");
  const prefix = (await page.getByTestId("keys-table").locator("td.font-mono").first().innerText()).replace("…", "");
  await box.fill(prefix);
  await box.press("Enter");
  await expect(page.getByTestId("search-keys")).toContainText(`${prefix}…`);
  await expect(page.getByTestId("search-keys").getByRole("link", { name: "globex" }).first()).toBeVisible();

  const res = await page.goto("/tenants/no-such-tenant");
  expect(res?.status()).toBe(404);
  await expect(page.getByRole("heading", { name: "Tenant not found" })).toBeVisible();

  await page.context().clearCookies();
  await signIn(page, "sre");
  await page.goto("/dashboards?range=2h");
  await expect(page.getByTestId("range-error")).toContainText("Unknown time range “2h”");
  await expect(page.getByTestId("range-error")).toContainText("5m, 15m, 1h, 24h, 7d, 30d");
  await expect(page.getByTestId("chart-decisions")).toHaveCount(0);
  await page.getByTestId("range-picker").getByRole("link", { name: "5m", exact: true }).click();
  await expect(page.getByTestId("range-picker").getByRole("link", { name: "5m", exact: true })).toHaveAttribute("aria-current", "page");
  await expect(page.getByTestId("chart-decisions")).toBeVisible();
});

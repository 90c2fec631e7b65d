/**
 * Issue #29 ("every number the control plane shows is true"), the parts a person sees in a browser:
 * one live control for the default failure mode (Settings shows it and links to it), a token must
 * be named, the role table says who opens what, /nfr fits its card, and the policy as YAML from the
 * Policy page. At 1280 and 390 px, with screenshots.
 */
import { expect, test, type Page } from "@playwright/test";
import { shot, signIn } from "./fixtures";

const WIDTHS = [1280, 390] as const;

async function both(page: Page, name: string, check?: () => Promise<void>) {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    if (check) await check();
    await shot(page, `truth-${name}-${width}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

test("the default failure mode has one control, live: Settings shows the live value and links to Operations (#29.6)", async ({ page }) => {
  await signIn(page, "sre");
  await page.goto("/settings");
  const section = page.getByTestId("settings-failure-mode");
  await expect(section).toContainText(/Default failure mode: (open|closed|local) \(live v\d+\)/);
  // No second, draft-saving control on Settings.
  await expect(page.getByLabel("Default failure mode")).toHaveCount(0);
  const before = (await section.locator("strong").textContent())!;
  const target = before === "open" ? "closed" : "open";
  await both(page, "settings-failure-mode");
  await section.getByRole("link", { name: /Change it live on Operations/ }).click();
  await expect(page).toHaveURL(/\/operations#failure-modes$/);
  const panel = page.getByTestId("failure-modes");
  await panel.getByLabel("Default failure mode").selectOption(target);
  await panel.getByRole("button", { name: "Apply to live…" }).click();
  await panel.getByRole("button", { name: "Confirm: apply live" }).click();
  await expect(page.getByTestId("failure-modes-result")).toContainText("Live: v");
  await page.goto("/settings");
  await expect(page.getByTestId("settings-failure-mode").locator("strong")).toHaveText(target);
  // Put it back, live, for the other specs.
  await page.goto("/operations");
  await page.getByTestId("failure-modes").getByLabel("Default failure mode").selectOption(before);
  await page.getByTestId("failure-modes").getByRole("button", { name: "Apply to live…" }).click();
  await page.getByTestId("failure-modes").getByRole("button", { name: "Confirm: apply live" }).click();
  await expect(page.getByTestId("failure-modes-result")).toContainText("Live: v");
});

test("a token needs a name, and the role table says billing and product open Dashboards (#29.9)", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/settings");
  const tokens = page.getByTestId("tokens");
  const rowsBefore = await page.getByTestId("tokens-table").locator("tbody tr").count();
  await tokens.getByRole("button", { name: "Create token" }).click();
  await expect(tokens.getByText("Name: enter a name for the token")).toBeVisible();
  await expect(page.getByTestId("tokens-table").locator("tbody tr")).toHaveCount(rowsBefore);
  const dashboards = page.getByTestId("roles-table").getByRole("row", { name: /open Dashboards/ });
  const cells = dashboards.getByRole("cell");
  // Columns: label, admin, product, sre, billing.
  for (const i of [1, 2, 3, 4]) await expect(cells.nth(i)).toHaveAttribute("aria-label", "allowed");
  await both(page, "settings-roles");
});

test("/nfr fits its card at 1280 and 390 px (#29.8)", async ({ page }) => {
  await signIn(page, "billing");
  await page.goto("/nfr");
  await expect(page.getByTestId("nfr-row").first()).toBeVisible();
  await both(page, "nfr", async () => {
    const fit = await page.getByTestId("nfr-table").evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, doc: document.documentElement.scrollWidth, view: window.innerWidth }));
    expect(fit.scroll).toBeLessThanOrEqual(fit.client + 1);
    expect(fit.doc).toBeLessThanOrEqual(fit.view + 1);
  });
});

test("the policy as YAML from the Policy page: the draft and the live version (#29 extra)", async ({ page }) => {
  await signIn(page, "product");
  await page.goto("/policy");
  const links = page.getByTestId("policy-yaml");
  await expect(links).toBeVisible();
  const liveHref = await links.getByTestId("policy-yaml-live").getAttribute("href");
  const live = await page.request.get(liveHref!);
  expect(live.status()).toBe(200);
  expect(await live.text()).toMatch(/^# Live policy v\d+\.\n/);
  const draft = await page.request.get((await links.getByTestId("policy-yaml-draft").getAttribute("href"))!);
  expect(draft.status()).toBe(200);
  expect(await draft.text()).toContain("tiers:");
  await both(page, "policy-yaml");
});

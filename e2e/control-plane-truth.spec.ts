/**
 * Issue #29 ("every number the control plane shows is true"), the parts a person sees in a browser:
 * one live control for the default failure mode (Settings shows it and links to it), a token must
 * be named, the role table says who opens what, /nfr fits its card, and the policy as YAML from the
 * Policy page; a key's own page with its rotation, a policy file applied from the Policy page,
 * alert rules edited on Dashboards. At 1280 and 390 px, with screenshots.
 */
import { createHash } from "node:crypto";
import { expect, test, type Page } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { drainClosedMinutes } from "../lib/jobs/rollup";
import { createRedisClient } from "../lib/redis/client";
import { UsageRecorder } from "../lib/redis/usage";
import { docShot, expectFits, shot, signIn } from "./fixtures";

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

test("a tenant is created in the UI; every override is listed with its expiry (#29 extras)", async ({ page }) => {
  await signIn(page, "product");
  await page.goto("/tenants");
  const list = page.getByTestId("overrides-list");
  await expect(list.getByTestId("override-row").first()).toBeVisible();
  await expect(list).toContainText(/expires in \d+ (day|days|h|min)|expired|no expiry/);
  const form = page.getByTestId("create-tenant");
  await form.getByLabel("Tenant slug").fill("acme");
  await form.getByLabel("Name").fill("Acme again");
  await form.getByRole("button", { name: "Create tenant" }).click();
  await expect(form.getByText("acme is already taken")).toBeVisible();
  await both(page, "tenants-create-overrides");
  // Fixed: the refusal goes, and the tenant is created; its page opens.
  await form.getByLabel("Tenant slug").fill("e2e-new-tenant");
  await expect(form.getByText("acme is already taken")).toHaveCount(0);
  await form.getByRole("button", { name: "Create tenant" }).click();
  await expect(page).toHaveURL(/\/tenants\/e2e-new-tenant$/);
});

test("a whole key pasted into search is looked up exactly (#29 extra)", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/search?q=sk_test_acme_ci_0001");
  await expect(page.getByTestId("search-exact")).toContainText("This is API key ci");
  await expect(page.getByTestId("search-exact")).toContainText("acme");
  await both(page, "search-exact");
  await page.goto("/search?q=sk_test_acme_ci_9999");
  await expect(page.getByTestId("search-exact")).toContainText("No API key is exactly this value");
});

async function bothDocs(page: Page, name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    await expectFits(page, `${name} at ${width} px`);
    await docShot(page, `${name}-${width}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

test("a key's own page: usage and denials by reason, last used, rotation with an overlap; linked from the key lookup and the tenant page (#29 extra)", async ({ page }) => {
  // 70 minutes ago (outside the last hour that e2e/dashboards.spec.ts counts exactly), acme's ci
  // key: 12 allowed, 5 rate limited, 2 over its quota.
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    const atMs = Math.floor(Date.now() / 60_000) * 60_000 - 70 * 60_000;
    const recorder = new UsageRecorder(redis, E2E.redisPrefix);
    const keyPrefix = createHash("sha256").update("sk_test_acme_ci_0001").digest("hex").slice(0, 12);
    const reasons = [...Array<null>(12).fill(null), ...Array<"rate_limited">(5).fill("rate_limited"), ...Array<"quota_exhausted">(2).fill("quota_exhausted")];
    reasons.forEach((reason, i) =>
      recorder.record({ atMs: atMs + i, tenant: "acme", tier: "free", operation: "orders-read", outcome: reason ? "denied" : "allowed", keyPrefix, latencyMs: 1, deniedReason: reason }),
    );
    await recorder.flush();
    await drainClosedMinutes({ db, redis, prefix: E2E.redisPrefix }, { nowMs: Date.now() + 60_000 });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }

  await signIn(page, "product");
  await page.goto("/search?q=sk_test_acme_ci_0001");
  await page.getByTestId("search-exact-key").click();
  await expect(page).toHaveURL(/\/tenants\/acme\/keys\/key_[0-9a-f]+$/);
  const keyUrl = page.url();
  await expect(page.getByRole("heading", { name: "API key ci" })).toBeVisible();
  await expect(page.getByTestId("key-status")).toHaveText("active");
  const usage = page.getByTestId("key-usage");
  await expect(usage).toContainText("Decisions19");
  await expect(usage).toContainText("Allowed12");
  await expect(usage).toContainText("Denied7");
  await expect(page.getByTestId("key-denial-rate_limited")).toContainText("5");
  await expect(page.getByTestId("key-denial-quota_exhausted")).toContainText("2");
  await expect(page.getByTestId("key-last-used")).toContainText(/in the minute of \d{4}-\d\d-\d\d \d\d:\d\d UTC \(1 h ago\)/);
  await expect(page.getByTestId("key-expiry")).toContainText("never");
  await bothDocs(page, "truth-key-page");

  // Rotate with an hour of overlap: the new key is shown once, the old one expires in an hour.
  page.once("dialog", (d) => void d.accept());
  await page.getByLabel("Overlap (both keys work)").selectOption({ label: "1 hour" });
  await page.getByRole("button", { name: "Rotate key" }).click();
  await expect(page.getByTestId("secret-shown-once")).toContainText("API key ci-r");
  await expect(page.getByTestId("secret-value")).toHaveText(/^sk_live_/);
  await expect(page.getByTestId("key-action-result")).toContainText("ci keeps working until");
  await expect(page.getByTestId("key-status")).toHaveText("expiring");
  await expect(page.getByTestId("key-expiry")).toContainText(/\(in (60 min|1 h); the worker revokes it then\)/);
  await expect(page.getByTestId("key-replaced-by")).toContainText("ci-r");
  await bothDocs(page, "truth-key-rotated");

  // The tenant page lists the old key as expiring and links each key to its page.
  await page.goto("/tenants/acme");
  const row = page.getByTestId("keys-table").getByRole("row", { name: /\bci\b.*expires/ });
  await expect(row).toBeVisible();
  await row.getByRole("link", { name: "ci", exact: true }).click();
  await expect(page).toHaveURL(keyUrl);
  // The audit log has the rotation.
  await page.goto("/audit?q=key.rotate");
  await expect(page.getByText("key.rotate").first()).toBeVisible();
});

test("a policy file applied from the Policy page: dry run first (errors by field), then into the draft; not for the SRE (#29 extra)", async ({ page }) => {
  await signIn(page, "sre");
  await page.goto("/policy");
  await expect(page.getByRole("heading", { name: "Version history" })).toBeVisible();
  await expect(page.getByTestId("apply-policy-file")).toHaveCount(0);

  await page.context().clearCookies();
  await signIn(page, "product");
  await page.goto("/policy");
  const draftHref = (await page.getByTestId("policy-yaml-draft").getAttribute("href"))!;
  const original = await (await page.request.get(draftHref)).text();
  const panel = page.getByTestId("apply-policy-file");
  const text = panel.getByLabel("Or paste it");
  // A bad field: named by its path, and Apply stays off.
  await text.fill(original.replace(/limit: 100\b/, "limit: -5"));
  await panel.getByRole("button", { name: "Dry run: show the changes" }).click();
  await expect(panel.getByTestId("policy-file-errors")).toContainText("limit");
  await expect(panel.getByRole("button", { name: "Apply to the draft" })).toBeDisabled();
  // A good change: listed, then applied.
  const changed = original.replace(/limit: 100\b/, "limit: 120");
  expect(changed).not.toBe(original);
  await text.fill(changed);
  await panel.getByRole("button", { name: "Dry run: show the changes" }).click();
  await expect(panel.getByTestId("policy-file-plan")).toContainText("Applying it would make 1 change to the draft.");
  await expect(panel.getByTestId("policy-file-plan")).toContainText("limit: 100 → 120");
  await bothDocs(page, "truth-policy-file");
  await panel.getByRole("button", { name: "Apply to the draft" }).click();
  await expect(panel.getByTestId("policy-file-applied")).toContainText("Applied to the draft: 1 change.");
  await expect(page.getByTestId("policy-diff")).toContainText("120");
  // And back, so the other specs find the draft as it was.
  await text.fill(original);
  await panel.getByRole("button", { name: "Dry run: show the changes" }).click();
  await expect(panel.getByTestId("policy-file-plan")).toContainText("limit: 120 → 100");
  await panel.getByRole("button", { name: "Apply to the draft" }).click();
  await expect(panel.getByTestId("policy-file-applied")).toContainText("Applied to the draft");
});

test("alert rules are edited on Dashboards with their errors named, and /metrics is linked (#29 extra)", async ({ page }) => {
  await signIn(page, "billing");
  await page.goto("/dashboards");
  await expect(page.getByTestId("alert-rule-deny_share").getByLabel("Threshold (%)")).toBeDisabled();

  await page.context().clearCookies();
  await signIn(page, "sre");
  await page.goto("/dashboards");
  await expect(page.getByTestId("metrics-link").getByRole("link")).toHaveAttribute("href", "http://127.0.0.1:8787/metrics");
  const rule = page.getByTestId("alert-rule-deny_share");
  await expect(rule.getByLabel("Threshold (%)")).toHaveValue("5");
  await rule.getByLabel("Threshold (%)").fill("0");
  await rule.getByRole("button", { name: "Save rule" }).click();
  await expect(rule.getByText("expected at least 0.1 %").first()).toBeVisible();
  await rule.getByLabel("Threshold (%)").fill("12");
  await rule.getByLabel("Window (minutes)").fill("90");
  await rule.getByRole("button", { name: "Save rule" }).click();
  await expect(rule.getByText("expected at most 60 minutes").first()).toBeVisible();
  await rule.getByLabel("Window (minutes)").fill("10");
  await rule.getByLabel("Notify (webhook URL; empty: the worker's)").fill("not a url");
  await rule.getByRole("button", { name: "Save rule" }).click();
  await expect(rule.getByText("expected a URL such as https://hooks.example.com/sluice").first()).toBeVisible();
  await rule.getByLabel("Notify (webhook URL; empty: the worker's)").fill("");
  await rule.getByRole("button", { name: "Save rule" }).click();
  await expect(rule.getByRole("status")).toContainText("Saved: 429 share of a tenant or tier at 12 % over 10 min");
  await page.reload();
  await expect(page.getByTestId("alert-rule-deny_share").getByLabel("Threshold (%)")).toHaveValue("12");
  await expect(page.getByTestId("alert-rule-deny_share")).toContainText("Edited by user:sre@sluice.test");
  await page.getByTestId("alert-rules").scrollIntoViewIfNeeded();
  await bothDocs(page, "truth-alert-rules");
  // Back to the default rules: later specs (e2e/dashboards.spec.ts) expect the default 429-share alert.
  const db = createDb(E2E.databaseUrl);
  await db.alertRule.deleteMany().finally(() => db.$disconnect());
});

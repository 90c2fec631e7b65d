import { expect, test } from "@playwright/test";
import { PASSWORD, shot, signIn, USERS } from "./fixtures";

test("an anonymous visitor is sent to the login page", async ({ page }) => {
  await page.goto("/tiers");
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Ftiers/);
  await shot(page, "login");
});

test("a wrong password and an unknown email get the same message", async ({ page }) => {
  await page.goto("/login");
  await page.getByLabel("Email").fill(USERS.sre);
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.locator("#login-error")).toHaveText("Wrong email or password.");
  // The form keeps what was typed.
  await expect(page.getByLabel("Email")).toHaveValue(USERS.sre);
  await page.getByLabel("Email").fill("nobody@sluice.test");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.locator("#login-error")).toHaveText("Wrong email or password.");
  await shot(page, "login-error");
});

test("the seeded credentials sign in, and the shell shows the user and role", async ({ page }) => {
  await signIn(page, "admin");
  await expect(page.getByTestId("current-user")).toHaveText(USERS.admin);
  const nav = page.getByRole("navigation", { name: "Main" });
  for (const item of ["Overview", "Tenants", "Tiers", "Operations", "Policy", "Simulator", "Dashboards", "Billing", "Audit", "Settings"]) {
    await expect(nav.getByRole("link", { name: item })).toBeVisible();
  }
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
});

test("five failed sign-ins lock the account: the sixth attempt is answered 429", async ({ page }) => {
  const email = "locked@sluice.test";
  await page.goto("/login");
  await page.getByLabel("Email").fill(email);
  for (let i = 0; i < 5; i++) {
    await page.getByLabel("Password").fill(`wrong-${i}`);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.locator("#login-error")).toHaveText("Wrong email or password.");
    await expect(page.getByRole("button", { name: "Sign in" })).toBeEnabled();
  }
  const answer = page.waitForResponse((r) => r.url().includes("/api/auth/callback/credentials"));
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  expect((await answer).status()).toBe(429);
  await expect(page.locator("#login-error")).toContainText("Too many failed sign-ins");
});

test("signing out ends the session on the server: the session cookie from before no longer signs in", async ({ page, context }) => {
  await signIn(page, "sre");
  const before = await context.cookies();
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
  // Put the old cookie back, as a copy in another tab or a stolen one would be.
  await context.addCookies(before);
  await page.goto("/dashboards");
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fdashboards/);
});

test("pages and API answers carry the security headers", async ({ page, request }) => {
  for (const answer of [await page.goto("/login"), await request.get("/api/v1/openapi.json")]) {
    const headers = answer!.headers();
    expect(headers["x-frame-options"]).toBe("DENY");
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["referrer-policy"]).toBe("strict-origin-when-cross-origin");
    expect(headers["x-content-type-options"]).toBe("nosniff");
  }
});

import { expect, test } from "@playwright/test";
import { shot, signIn } from "./fixtures";

test("an sre reads the policy but cannot publish it, in the UI or through the API", async ({ page, baseURL }) => {
  await signIn(page, "sre");
  await page.goto("/policy");
  await expect(page.getByTestId("publish-forbidden")).toBeVisible();
  await expect(page.getByRole("button", { name: /Publish/ })).toHaveCount(0);
  await expect(page.getByRole("button", { name: /Roll back/ })).toHaveCount(0);
  await shot(page, "policy-sre");
  // The server refuses too: the session cookie rides along, the role does not allow it.
  const res = await page.request.post("/api/v1/policy/publish", { headers: { origin: baseURL!, "content-type": "application/json" }, data: {} });
  expect(res.status()).toBe(403);
  // The tiers page is read-only for an sre.
  await page.goto("/tiers");
  await expect(page.getByRole("link", { name: "New tier" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: /Save tier/ })).toHaveCount(0);
});

test("billing cannot read the audit log or manage users", async ({ page }) => {
  await signIn(page, "billing");
  await page.goto("/audit");
  await expect(page.getByTestId("forbidden")).toBeVisible();
  await page.goto("/settings");
  await expect(page.getByTestId("users-table")).toHaveCount(0);
  await expect(page.getByTestId("tokens")).toHaveCount(0);
});

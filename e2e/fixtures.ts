/** Seeded accounts (e2e/global-setup.ts) and small helpers shared by the specs. */
import { expect, type Page } from "@playwright/test";

export const PASSWORD = "e2e-password-123";
export const USERS = {
  admin: "admin@sluice.test",
  product: "product@sluice.test",
  sre: "sre@sluice.test",
  billing: "billing@sluice.test",
} as const;

export async function signIn(page: Page, role: keyof typeof USERS, password = PASSWORD): Promise<void> {
  await page.goto("/login");
  await page.getByLabel("Email").fill(USERS[role]);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("current-role")).toHaveText(role);
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `e2e/screenshots/${name}.png`, fullPage: true });
}

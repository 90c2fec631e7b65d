/** Seeded accounts (e2e/global-setup.ts) and small helpers shared by the specs. */
import path from "node:path";
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

/** A full-page screenshot for the docs: docs/screenshots/<name>.png. */
export async function docShot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.resolve(import.meta.dirname, `../docs/screenshots/${name}.png`), fullPage: true });
}

/** How far the page reaches past the right edge of the window (0 when it fits), and what reaches. */
async function overflow(page: Page): Promise<{ px: number; culprits: string[] }> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const culprits: string[] = [];
    for (const el of document.querySelectorAll("body *")) {
      const r = el.getBoundingClientRect();
      if (r.right > width + 1 && r.width > 0) {
        // Inside a box that scrolls sideways, a wide table is fine.
        let p = el.parentElement;
        let scrolls = false;
        while (p && p !== document.body) {
          const o = getComputedStyle(p).overflowX;
          if ((o === "auto" || o === "scroll" || o === "hidden") && p.getBoundingClientRect().right <= width + 1) {
            scrolls = true;
            break;
          }
          p = p.parentElement;
        }
        if (!scrolls) culprits.push(`${el.tagName.toLowerCase()}.${String(el.className).slice(0, 60)} right=${Math.round(r.right)}`);
      }
    }
    return { px: Math.max(0, document.documentElement.scrollWidth - width), culprits: culprits.slice(0, 5) };
  });
}

/**
 * Nothing on the page is wider than the window (wide tables scroll inside their own box). Polled:
 * charts size themselves from a ResizeObserver, so for a frame or two after the viewport changes
 * they keep the old width (CI once measured a 1280 px chart, 503 px wide, on the 390 px page).
 */
export async function expectFits(page: Page, label: string): Promise<void> {
  await expect.poll(() => overflow(page), { message: `${label} is wider than the window`, timeout: 5_000 }).toEqual({ px: 0, culprits: [] });
}

/** Creates a tier from /tiers?new=1 with one limit (`limit` per `window` per API key, every operation); lands on its tab. */
export async function createTierInUi(page: Page, tier: string, limit = "3", window = "1m"): Promise<void> {
  await page.goto("/tiers?new=1");
  await page.getByLabel("Tier name").fill(tier);
  await page.getByRole("button", { name: "Add a limit for * per api_key" }).click();
  const editor = page.getByTestId("cell-editor");
  await editor.getByLabel("Limit", { exact: true }).fill(limit);
  await editor.getByLabel("Window (e.g. 1m)").fill(window);
  await page.getByRole("button", { name: "Create tier" }).click();
  await expect(page).toHaveURL(new RegExp(`/tiers\\?tier=${tier}`));
}

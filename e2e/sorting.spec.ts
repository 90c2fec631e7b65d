/**
 * Tables are sortable (issue 5): a click (or Enter) on a column header reorders the rows, the
 * sorted header says so with aria-sort and an arrow. Paged tables (tenants, audit log) sort on the
 * server through the URL, so the order covers every page; small lists (users, tokens) sort in the
 * browser. Orders are checked against a sorted copy of the cells read from the page.
 */
import { expect, test, type Locator, type Page } from "@playwright/test";
import { shot, signIn } from "./fixtures";

test.describe.configure({ mode: "serial" });

/** The texts of column `n` (1-based), first line of each cell. */
async function column(table: Locator, n: number): Promise<string[]> {
  const texts = await table.locator(`tbody tr > td:nth-child(${n})`).allInnerTexts();
  return texts.map((t) => t.split("\n")[0]!.trim());
}

// The e2e database's collation is C (byte order), the order JavaScript's default sort gives ASCII.
const byteOrder = (xs: string[], dir: "asc" | "desc" = "asc") => {
  const sorted = [...xs].sort();
  return dir === "asc" ? sorted : sorted.reverse();
};
// Browser-sorted lists use a case-insensitive natural collation (components/table-sort.ts).
const collated = (xs: string[], dir: "asc" | "desc" = "asc") => {
  const sorted = [...xs].sort((a, b) => a.localeCompare(b, "en", { numeric: true, sensitivity: "base" }));
  return dir === "asc" ? sorted : sorted.reverse();
};

const header = (page: Page, testId: string, name: string) => page.getByTestId(testId).getByRole("columnheader", { name: new RegExp(`^${name}`) });

test("the tenants list sorts on the server by the clicked column, in both directions", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/tenants");
  const table = page.getByTestId("tenants-table");
  const initial = await column(table, 1);
  expect(initial.length).toBeGreaterThan(3);
  expect(initial).toEqual(byteOrder(initial));
  await expect(header(page, "tenants-table", "Slug")).toHaveAttribute("aria-sort", "ascending");

  // The sorted column flips to descending.
  await header(page, "tenants-table", "Slug").getByRole("link").click();
  await expect(page).toHaveURL(/\/tenants\?dir=desc$/);
  await expect(header(page, "tenants-table", "Slug")).toHaveAttribute("aria-sort", "descending");
  const desc = await column(table, 1);
  expect(desc).toEqual(byteOrder(initial, "desc"));
  expect(desc).not.toEqual(initial);

  // Another column starts ascending; within one tier, tenants stay in slug order.
  await header(page, "tenants-table", "Tier").getByRole("link").click();
  await expect(page).toHaveURL(/sort=tier/);
  await expect(header(page, "tenants-table", "Tier")).toHaveAttribute("aria-sort", "ascending");
  await expect(header(page, "tenants-table", "Slug")).not.toHaveAttribute("aria-sort", /.*/);
  const tiers = await column(table, 3);
  expect(tiers).toEqual(byteOrder(tiers));
  expect(new Set(tiers).size).toBeGreaterThan(1);
  const slugs = await column(table, 1);
  const pairs = tiers.map((t, i) => `${t} ${slugs[i]}`);
  expect(pairs).toEqual(byteOrder(pairs));
  await shot(page, "sorting-tenants-by-tier");

  // Keyboard: the header control is reachable and Enter sorts.
  const namesByTier = await column(table, 2);
  await header(page, "tenants-table", "Name").getByRole("link").focus();
  await page.keyboard.press("Enter");
  await expect(header(page, "tenants-table", "Name")).toHaveAttribute("aria-sort", "ascending");
  const names = await column(table, 2);
  expect(names).toEqual(byteOrder(names));
  expect(names).not.toEqual(namesByTier);
});

test("settings users and tokens sort in the browser; a token created here is audited", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/settings");
  const users = page.getByTestId("users-table");
  const initial = await column(users, 1);
  expect(initial.length).toBeGreaterThanOrEqual(4);
  // No header claims a sort before one is chosen (the server's order is shown).
  await expect(users.locator("th[aria-sort]")).toHaveCount(0);

  await header(page, "users-table", "Email").getByRole("button").click();
  await expect(header(page, "users-table", "Email")).toHaveAttribute("aria-sort", "ascending");
  expect(await column(users, 1)).toEqual(collated(initial));
  await header(page, "users-table", "Email").getByRole("button").click();
  await expect(header(page, "users-table", "Email")).toHaveAttribute("aria-sort", "descending");
  const desc = await column(users, 1);
  expect(desc).toEqual(collated(initial, "desc"));
  expect(desc).not.toEqual(initial);

  // The role column holds a <select>: read its value.
  await header(page, "users-table", "Role").getByRole("button").click();
  await expect(header(page, "users-table", "Role")).toHaveAttribute("aria-sort", "ascending");
  await expect(users.locator("th[aria-sort]")).toHaveCount(1);
  const roles = await users.locator("tbody tr > td:nth-child(3) select").evaluateAll((els) => els.map((e) => (e as HTMLSelectElement).value));
  expect(roles).toEqual(collated(roles));
  await shot(page, "sorting-settings-users");

  // Two tokens, created a then b: the server lists newest first, the Name header reorders them.
  for (const name of ["e2e-sort-a", "e2e-sort-b"]) {
    await page.getByLabel("Name", { exact: true }).fill(name);
    await page.getByRole("button", { name: "Create token" }).click();
    await expect(page.getByTestId("secret-shown-once")).toContainText(`Token ${name} created.`);
    await page.getByRole("button", { name: "Done" }).click();
  }
  const tokens = page.getByTestId("tokens-table");
  await expect(tokens).toContainText("e2e-sort-b");
  const mine = async () => (await column(tokens, 2)).filter((n) => n.startsWith("e2e-sort-"));
  expect(await mine()).toEqual(["e2e-sort-b", "e2e-sort-a"]);
  await header(page, "tokens-table", "Name").getByRole("button").click();
  await expect(header(page, "tokens-table", "Name")).toHaveAttribute("aria-sort", "ascending");
  expect(await mine()).toEqual(["e2e-sort-a", "e2e-sort-b"]);
  const names = await column(tokens, 2);
  expect(names).toEqual(collated(names));
});

test("the audit log sorts on the server by time, actor and entity, newest first by default", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/audit");
  const table = page.getByTestId("audit-table");
  await expect(header(page, "audit-table", "When")).toHaveAttribute("aria-sort", "descending");
  const newest = await column(table, 1);
  expect(newest).toEqual(byteOrder(newest, "desc"));
  // The latest change is the admin's token from the previous test; the seed came first.
  expect((await column(table, 2))[0]).toContain("admin@sluice.test");

  await header(page, "audit-table", "When").getByRole("link").click();
  await expect(page).toHaveURL(/\/audit\?dir=asc$/);
  await expect(header(page, "audit-table", "When")).toHaveAttribute("aria-sort", "ascending");
  const oldest = await column(table, 1);
  expect(oldest).toEqual(byteOrder(oldest));
  expect(oldest[0]! <= newest[newest.length - 1]!).toBe(true);
  expect((await column(table, 2))[0]).not.toContain("admin@sluice.test");

  await header(page, "audit-table", "Actor").getByRole("link").click();
  await expect(page).toHaveURL(/sort=actor/);
  await expect(header(page, "audit-table", "Actor")).toHaveAttribute("aria-sort", "ascending");
  await expect(header(page, "audit-table", "When")).not.toHaveAttribute("aria-sort", /.*/);
  const actors = await column(table, 2);
  expect(actors).toEqual(byteOrder(actors));
  await header(page, "audit-table", "Actor").getByRole("link").click();
  await expect(header(page, "audit-table", "Actor")).toHaveAttribute("aria-sort", "descending");
  const actorsDesc = await column(table, 2);
  expect(actorsDesc).toEqual(byteOrder(actorsDesc, "desc"));
  expect(actorsDesc[0]).not.toEqual(actors[0]);

  await header(page, "audit-table", "Entity").getByRole("link").click();
  await expect(header(page, "audit-table", "Entity")).toHaveAttribute("aria-sort", "ascending");
  const entities = await column(table, 4);
  expect(entities).toEqual(byteOrder(entities));
  await shot(page, "sorting-audit-by-entity");

  // A filter keeps the sort; pages follow it too.
  await page.getByLabel("Entity").selectOption("token");
  await page.getByRole("button", { name: "Filter" }).click();
  await expect(page).toHaveURL(/entity=token/);
  await expect(page).toHaveURL(/sort=entity/);

  // Unknown column or direction: the default order, not an error.
  const res = await page.goto("/audit?sort=password&dir=sideways&page=-1");
  expect(res?.status()).toBe(200);
  await expect(header(page, "audit-table", "When")).toHaveAttribute("aria-sort", "descending");
  expect(await column(table, 1)).toEqual(newest);
});

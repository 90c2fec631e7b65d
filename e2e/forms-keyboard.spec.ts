/**
 * The tier form by keyboard (issue #18, forms and keyboard): an empty "New tier" highlights what it
 * complains about; "+ add" opens the limit editor with focus inside and says what it added, Escape
 * takes an untouched new limit back and returns focus; the editor shows only the fields of the
 * chosen algorithm (Lease TTL for concurrency only). Delete tier asks first, removes a tier nobody is
 * on from the draft, and refuses one with tenants, saying why.
 */
import { expect, test } from "@playwright/test";
import { createTierInUi, signIn } from "./fixtures";

test("the limit editor by keyboard, and an empty new tier names its missing fields", async ({ page }) => {
  await signIn(page, "product");
  await page.goto("/tiers?new=1");
  const name = page.getByLabel("Tier name");
  await expect(name).toHaveAttribute("aria-invalid", "true");
  await expect(page.getByTestId("fix-fields")).toContainText("Tier name");
  await expect(page.getByRole("button", { name: "Create tier" })).toBeDisabled();
  await name.fill("keyboard-tier");
  await expect(page.getByTestId("fix-fields")).toHaveCount(0);

  const add = page.getByRole("button", { name: "Add a limit for * per api_key" });
  await add.focus();
  await page.keyboard.press("Enter");
  const editor = page.getByTestId("cell-editor");
  await expect(editor.getByLabel("Algorithm")).toBeFocused();
  await expect(editor.getByTestId("fresh-limit")).toContainText("press Escape to take it back");
  // Named as on every screen (lib/policy/labels.ts).
  await expect(editor.getByTestId("limit-name")).toHaveText("API key · sliding window counter · 100 per 1 min");
  await expect(page.getByTestId("limit-matrix").getByRole("button", { name: /^Edit \* api_key/ })).toHaveCount(1);
  await page.keyboard.press("Escape");
  await expect(editor).toHaveCount(0);
  await expect(page.getByTestId("limit-matrix").getByRole("button", { name: /^Edit \* api_key/ })).toHaveCount(0);
  await expect(add).toBeFocused();

  // Added and edited, it stays; the fields follow the algorithm.
  await page.keyboard.press("Enter");
  await editor.getByLabel("Limit", { exact: true }).fill("7");
  await expect(editor.getByLabel("Lease TTL (concurrency)")).toHaveCount(0);
  await expect(editor.getByLabel("Precision (sliding counter)")).toBeVisible();
  await editor.getByLabel("Algorithm").selectOption("concurrency");
  await expect(editor.getByLabel("Lease TTL (concurrency)")).toBeVisible();
  await expect(editor.getByLabel("Window (e.g. 1m)")).toHaveCount(0);
  await expect(editor.getByLabel("Burst")).toHaveCount(0);
  await editor.getByLabel("Algorithm").selectOption("token_bucket");
  await expect(editor.getByLabel("Burst")).toBeVisible();
  await expect(editor.getByLabel("Lease TTL (concurrency)")).toHaveCount(0);
  await expect(editor.getByLabel("Window (e.g. 1m)")).toHaveValue("1m");
  await page.keyboard.press("Escape");
  await expect(editor).toHaveCount(0);
  await expect(page.getByTestId("limit-matrix").getByRole("button", { name: /^Edit \* api_key token_bucket/ })).toHaveCount(1);
  await expect(page.getByRole("button", { name: "Create tier" })).toBeEnabled();
});

test("Delete tier asks, then removes a tier without tenants from the list; a tier with tenants is refused with the reason", async ({ page }) => {
  await signIn(page, "product");
  const tier = "e2e-delete-me";
  const tabs = page.getByRole("tablist", { name: "Tiers" });
  const tab = (name: string) => tabs.getByRole("tab", { name: new RegExp(`^${name} \\(`) });

  await createTierInUi(page, tier);
  await expect(tab(tier)).toBeVisible();

  let asked = "";
  page.once("dialog", (d) => {
    asked = d.message();
    void d.accept();
  });
  await page.getByRole("button", { name: `Delete tier ${tier}` }).click();
  await expect(page).toHaveURL(/\/tiers$/);
  await expect(tab(tier)).toHaveCount(0);
  expect(asked).toBe(`Delete tier ${tier} from the draft?`);
  await page.reload();
  await expect(tab("pro")).toBeVisible();
  await expect(tab(tier)).toHaveCount(0);

  // The seed puts tenants on pro: the draft keeps it, and the button says why.
  await page.goto("/tiers?tier=pro");
  page.once("dialog", (d) => void d.accept());
  await page.getByRole("button", { name: "Delete tier pro" }).click();
  await expect(page.getByRole("alert").filter({ hasText: /^\d+ tenant\(s\) are on pro; move them to another tier first$/ })).toBeVisible();
  await page.reload();
  await expect(tab("pro")).toHaveAttribute("aria-selected", "true");
});

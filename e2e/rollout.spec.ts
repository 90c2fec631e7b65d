/**
 * The guarded rollout on the Policy page, at 1280 px and 390 px: a product manager starts a rollout
 * of a draft change to two canaries (an unknown canary is refused, naming it), pauses, resumes to
 * the next step and promotes it to everyone (1280), or aborts it (390).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { applyPolicyFile } from "../lib/services/apply-policy-file";
import { shot, signIn } from "./fixtures";

test.describe.configure({ mode: "serial" });

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../examples/demo-policy.yaml"), "utf8");

/** A draft change: the free tier's per-key limit set to `limit` a minute. */
async function draftChange(limit: number): Promise<void> {
  const db = createDb(E2E.databaseUrl);
  try {
    await applyPolicyFile(db, DEMO.replace("scope: api_key, algorithm: sliding_window_counter, limit: 100, window: 1m", `scope: api_key, algorithm: sliding_window_counter, limit: ${limit}, window: 1m`), { actor: "e2e-rollout" });
  } finally {
    await db.$disconnect();
  }
}

for (const viewport of [
  { width: 1280, height: 900, limit: 60 },
  { width: 390, height: 844, limit: 40 },
]) {
  test(`a product manager rolls a change out to canaries first at ${viewport.width} px`, async ({ page }) => {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    await draftChange(viewport.limit);
    await signIn(page, "product");
    await page.goto("/policy");
    const panel = page.getByTestId("rollout-panel");
    await panel.getByLabel("Canary tenants (slugs, comma-separated; optional)").fill("acme, nobody");
    await panel.getByLabel("Steps (percent of tenants : bake time, ending at 100%)").fill("10%:1h, 100%");
    await panel.getByRole("button", { name: "Start rollout" }).click();
    await expect(panel.getByTestId("rollout-result")).toHaveText('canaries[1]: no tenant "nobody" in the draft');

    await panel.getByLabel("Canary tenants (slugs, comma-separated; optional)").fill("acme, globex");
    await panel.getByRole("button", { name: "Start rollout" }).click();
    await expect(panel.getByTestId("rollout-state")).toHaveText("running");
    await expect(panel.getByTestId("rollout-status")).toContainText("Step 1 of 3: 2 canaries for 15m");
    await expect(panel.getByTestId("rollout-status")).toContainText(/Cohort: 2 of \d+ tenants \(acme, globex\)/);
    await expect(panel.getByTestId("rollout-status")).toContainText("Guardrail: the cohort's 429 share at most 5 points above the control's");
    await panel.scrollIntoViewIfNeeded();
    await shot(page, `policy-rollout-${viewport.width}`);

    if (viewport.width === 1280) {
      await panel.getByRole("button", { name: "Pause" }).click();
      await expect(panel.getByTestId("rollout-state")).toHaveText("paused");
      await panel.getByRole("button", { name: "Resume: next step" }).click();
      await expect(panel.getByTestId("rollout-status")).toContainText("Step 2 of 3: 10% + 2 canaries for 1h");
      await panel.getByRole("button", { name: "Promote to everyone" }).click();
      await expect(panel.getByTestId("rollout-state")).toHaveText("completed");
      // The last step was a normal publish, noted with the rollout it completed.
      await expect(page.getByTestId("versions-table")).toContainText(/rollout ro_[0-9a-f]+/);
    } else {
      page.once("dialog", (d) => void d.accept());
      await panel.getByRole("button", { name: "Abort" }).click();
      await expect(panel.getByTestId("rollout-state")).toHaveText("aborted");
      await expect(panel.getByTestId("rollout-reason")).toContainText("aborted by");
      await shot(page, `policy-rollout-aborted-${viewport.width}`);
    }
  });
}

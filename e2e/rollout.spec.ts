/**
 * The guarded rollout on the Policy page, at 1280 px and 390 px: a product manager starts a rollout
 * of a draft change to two canaries (an unknown canary is refused, naming it), pauses, resumes to
 * the next step and promotes it to everyone (1280), or aborts it (390). Then, under an approval
 * rule, the product manager's publish waits: the page refuses them their own approval, and an admin
 * (another user with publish rights) approves it, at both widths, and the confirmation stays.
 * A rollout that started 20 minutes ago shows its cohort-against-control charts per minute
 * (docs/screenshots/rollout-charts-<width>.png).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { createRedisClient } from "../lib/redis/client";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { approveRequest, listApprovals } from "../lib/services/approval/decide-approval";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { writeRecordedMinute } from "../lib/jobs/testing/recorded-minute";
import { changeRollout } from "../lib/services/rollout/control-rollout";
import { startRollout } from "../lib/services/rollout/start-rollout";
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

    // The Overview and the Dashboards say a rollout is in progress, and link to the Policy page.
    for (const where of ["/", "/dashboards"]) {
      await page.goto(where);
      const banner = page.getByTestId("rollout-banner");
      await expect(banner).toContainText(/rollout running\s*v\d+ answers 2 of \d+ tenants, v\d+ everyone else — step 1 of 3: 2 canaries for 15m\./);
      await expect(banner.getByRole("link", { name: "Watch it on the Policy page →" })).toHaveAttribute("href", "/policy");
    }
    await page.goto("/policy");

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

/** Runs `fn` with the e2e database and Redis (the services write what the running app reads). */
async function withStores<T>(fn: (deps: { db: ReturnType<typeof createDb>; redis: ReturnType<typeof createRedisClient> }) => Promise<T>): Promise<T> {
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    return await fn({ db, redis });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
}

const RULE = "\napproval:\n  beyondPercent: 20\n";
const withLimit = (limit: number) => DEMO.replace("scope: api_key, algorithm: sliding_window_counter, limit: 100, window: 1m", `scope: api_key, algorithm: sliding_window_counter, limit: ${limit}, window: 1m`);

for (const viewport of [
  { width: 1280, height: 900, limit: 70 },
  { width: 390, height: 844, limit: 30 },
]) {
  test(`a publish under the approval rule waits for a second person at ${viewport.width} px`, async ({ page, browser }) => {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    // The rule goes live first (nothing live requires approval yet), then the PM drafts a change to the free tier (5 of 12 tenants).
    await withStores(async ({ db, redis }) => {
      await applyPolicyFile(db, `${DEMO}${RULE}`, { actor: "e2e-approval" });
      await publishPolicy({ db, redis }, { actor: "e2e-approval", role: "admin", note: "approval rule" });
      await applyPolicyFile(db, `${withLimit(viewport.limit)}${RULE}`, { actor: "e2e-approval" });
    });
    await signIn(page, "product");
    await page.goto("/policy");
    await page.getByTestId("publish-panel").getByRole("button", { name: /^Publish \d+ change/ }).click();
    await page.getByRole("button", { name: "Confirm publish" }).click();
    await expect(page.getByTestId("publish-result")).toContainText(/Approval required \(it reaches 5 of 12 tenants .*\): request apr_\w+ waits for another user with publish rights\. Nothing was published\./);
    await page.reload();
    const request = page.getByTestId("approvals-panel").locator("li[data-testid^=approval-apr_]");
    await expect(request).toContainText("publish the draft to everyone as");
    await expect(request.getByTestId("approval-diff")).toContainText(`sliding_window_counter 100 per 1m → sliding_window_counter ${viewport.limit} per 1m`);
    // Its author is refused: no Approve button, and the reason why.
    await expect(request.getByTestId("approval-own")).toHaveText("You requested this: another user with publish rights must approve it. You may withdraw it.");
    await expect(request.getByRole("button", { name: "Approve" })).toHaveCount(0);
    await request.scrollIntoViewIfNeeded();
    await shot(page, `policy-approval-pending-${viewport.width}`);

    const admin = await browser.newPage({ viewport: { width: viewport.width, height: viewport.height } });
    try {
      await signIn(admin, "admin");
      await admin.goto("/policy");
      const theirs = admin.getByTestId("approvals-panel").locator("li[data-testid^=approval-apr_]");
      await expect(theirs).toContainText("requested by user:product@sluice.test");
      await theirs.getByRole("button", { name: "Approve" }).click();
      // Approved: the page re-renders without the request, and the confirmation stays in its place.
      await expect(admin.getByTestId("approvals-panel")).toHaveCount(0);
      await expect(admin.getByTestId("approvals-decided")).toContainText(/Approved apr_\w+: version \d+ is live\./);
      await admin.reload();
      await expect(admin.getByTestId("approvals-decided")).toHaveCount(0);
      await expect(admin.getByTestId("versions-table")).toContainText("approved by user:admin@sluice.test");
      await shot(admin, `policy-approval-approved-${viewport.width}`);
    } finally {
      await admin.close();
    }
    // Leave no rule behind for the specs after this one: dropping it is itself approved by a second person.
    await withStores(async ({ db, redis }) => {
      await applyPolicyFile(db, DEMO, { actor: "e2e-approval" });
      const drop = await publishPolicy({ db, redis }, { actor: "e2e-approval", role: "admin" });
      if (drop.approval) await approveRequest({ db, redis }, drop.approval.id, { actor: "e2e-approval-2" });
      expect(await listApprovals({ db }, { state: "pending" })).toEqual([]);
    });
  });
}

for (const viewport of [
  { width: 1280, height: 900, limit: 55 },
  { width: 390, height: 844, limit: 45 },
]) {
  test(`the Policy page charts a running rollout's cohort against its control per minute at ${viewport.width} px`, async ({ page }) => {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    await draftChange(viewport.limit);
    const MIN = 60_000;
    const startMs = Math.floor(Date.now() / MIN) * MIN - 20 * MIN + 5_000;
    // A rollout that started 20 minutes ago, and the minutes its decision servers recorded since.
    const id = await withStores(async ({ db, redis }) => {
      const started = await startRollout({ db, redis }, { canaries: ["acme", "globex"], canaryBake: "10m", steps: ["25%:1h", "100%"] }, { actor: "e2e-rollout", nowMs: startMs });
      if (started.status !== "started") throw new Error(`expected a started rollout, got ${started.status}`);
      await changeRollout({ db, redis }, "promote", { actor: "e2e-rollout", nowMs: startMs + 10 * MIN });
      for (let i = 0; i < 20; i++) {
        const m = Math.floor(startMs / MIN) * MIN + i * MIN;
        // The canaries' 429s climb while the control stays near 1%; hooli's 403s are no 429s.
        await writeRecordedMinute(db, m, [
          { tenant: "acme", allowed: 180, denied: { rate_limited: 4 + (i % 5) } },
          { tenant: "globex", tier: "pro", allowed: 260, denied: { quota_exhausted: 2 + (i % 3) }, latencyMs: 2 },
          { tenant: "umbrella", allowed: 300, denied: { rate_limited: 3 } },
          { tenant: "hooli", allowed: 240, denied: { tenant_suspended: 30, rate_limited: 2 } },
          { tenant: "stark", tier: "pro", allowed: 400 + 10 * i, denied: { rate_limited: 4 }, latencyMs: i % 4 === 0 ? 6 : 1 },
        ]);
      }
      return started.rollout.id;
    });
    try {
      await signIn(page, "product");
      await page.goto("/policy");
      const charts = page.getByTestId("rollout-charts");
      await expect(charts).toContainText(`Rollout ${id}: cohort against control, per minute`);
      await expect(charts).toContainText("the 429 share counts 429s only");
      for (const name of ["rollout-429-share", "rollout-decisions", "rollout-margin", "rollout-latency"]) await expect(charts.getByTestId(`chart-${name}`).locator("svg.recharts-surface").first()).toBeVisible();
      await expect(charts.getByTestId("chart-rollout-latency")).toContainText("all tenants (recorded per decision server, not per cohort)");
      await expect(charts.getByTestId("chart-rollout-margin")).toContainText("step 2");
      await charts.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.resolve(import.meta.dirname, `../docs/screenshots/rollout-charts-${viewport.width}.png`), fullPage: true });
    } finally {
      await withStores(({ db, redis }) => changeRollout({ db, redis }, "abort", { actor: "e2e-rollout", reason: "e2e: charts seen" }));
    }
  });
}


/**
 * The Envoy pages, read-only, at 1280 px and 390 px: the domains of the draft against live, one
 * domain's tree with each rule as a sentence, and the Policy page's diff naming the changed rule.
 * Live: the demo policy with README example 2 imported (`sluice import envoy --into`); draft: one
 * of its rules raised. Screenshots go to docs/screenshots/envoy-<width>-<page>.png.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { parse, stringify } from "yaml";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { createRedisClient } from "../lib/redis/client";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { importEnvoyConfigs } from "../lib/services/policy/import-envoy";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { signIn } from "./fixtures";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../examples/demo-policy.yaml"), "utf8");
const MESSAGING = `domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
  - key: files
    value: files/*
    share_threshold: true
    shadow_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 10
`;

test.describe.configure({ mode: "serial" });

test.beforeAll(async () => {
  const imported = importEnvoyConfigs([{ name: "messaging.yaml", text: MESSAGING }], { into: { name: "demo-policy.yaml", text: DEMO } });
  if (!imported.ok) throw new Error(JSON.stringify(imported.issues));
  const draft = parse(imported.text);
  draft.rateLimitService.domains[0].descriptors[1].rate_limit.requests_per_unit = 200;
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    await applyPolicyFile(db, imported.text, { actor: "e2e-envoy" });
    await publishPolicy({ db, redis }, { actor: "e2e-envoy", note: "messaging imported" });
    await applyPolicyFile(db, stringify(draft), { actor: "e2e-envoy" });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
});

test.afterAll(async () => {
  // Live and draft back to the demo policy, as the other specs expect them.
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    await applyPolicyFile(db, DEMO, { actor: "e2e-envoy" });
    await publishPolicy({ db, redis }, { actor: "e2e-envoy", note: "demo policy again" });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
});

for (const vp of [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
] as const) {
  test(`the Envoy pages show each domain's rules as sentences and what publishing changes, at ${vp.width} px`, async ({ page }) => {
    await page.setViewportSize(vp);
    await signIn(page, "billing");
    await page.goto("/envoy");
    const row = page.getByTestId("envoy-domains").getByRole("row").filter({ hasText: "messaging" });
    await expect(row).toContainText("3");
    await expect(row).toContainText("changed");
    await expect(page.getByTestId("envoy-settings")).toContainText("answers OK (as envoyproxy/ratelimit does)");
    await page.screenshot({ path: `docs/screenshots/envoy-${vp.width}-domains.png`, fullPage: true });

    await row.getByRole("link", { name: "messaging" }).click();
    await expect(page).toHaveURL(/\/envoy\/messaging$/);
    const tree = page.getByTestId("envoy-tree");
    await expect(tree.getByRole("listitem")).toHaveText([
      "message_type=marketing: no limit of its own",
      "└ to_number: 5 per day, each value apart",
      "to_number: 200 per day, each value apart",
      "files=files/* (one counter for all matches): 10 per hour, shadow",
    ]);
    await expect(page.getByTestId("envoy-domain-changes")).toContainText("Envoy messaging: to_number — 100 per day, each value apart → 200 per day, each value apart");
    await expect(page.getByTestId("envoy-live-tree")).toContainText("to_number: 100 per day, each value apart");
    await page.screenshot({ path: `docs/screenshots/envoy-${vp.width}-domain.png`, fullPage: true });

    await page.goto("/policy");
    await expect(page.getByTestId("policy-diff")).toContainText("Envoy messaging: to_number — 100 per day, each value apart → 200 per day, each value apart");

    await page.goto("/envoy/nowhere");
    await expect(page.getByText(/could not be found|not found/i).first()).toBeVisible();
  });
}

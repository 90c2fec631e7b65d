/**
 * Justify and prove, in the browser, on real data: recorded usage seeded as the worker's rollup
 * writes it (lib/jobs/rollup.ts), the replay panel on the draft's diff and in the simulator, the
 * limit advisor and the capacity planner, the NFR page (the rows `sluice nfr` prints), a
 * certification report stored with a version, and the accuracy meter's panel on the dashboards.
 * Screenshots at 1280 and 390 px go to docs/screenshots/.
 */
import { expect, test, type Page } from "@playwright/test";
import { E2E } from "../playwright.config";
import { createDb } from "../lib/db/client";
import { saveCertificationReport } from "../lib/db/certify-repo";
import { insertRollupRows, rollupRows } from "../lib/jobs/rollup";
import { createRedisClient } from "../lib/redis/client";
import { sha256Hex } from "../lib/redis/key-index";
import type { UsageMinute } from "../lib/redis/usage-format";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { formatReportHtml, type CertificationReport } from "../lib/services/certify/report";
import { nfrRowsOf } from "../lib/services/justify/nfr";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { readPublishedVersion } from "../lib/services/policy/published-version";
import { replayDraft } from "../lib/services/justify/replay-draft";
import { allowedMinute, JUSTIFY_DRAFT } from "../lib/services/justify/testing/recorded-usage";
import { DEMO } from "../lib/services/policy/testing/policy-rows";
import { signIn } from "./fixtures";

const MIN = 60_000;
const GLOBEX_CI = sha256Hex("sk_test_globex_ci_0001").slice(0, 12);
const ACME_CI = sha256Hex("sk_test_acme_ci_0001").slice(0, 12);

async function screenshots(page: Page, name: string) {
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: `docs/screenshots/${name}-1280.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `docs/screenshots/${name}-390.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

let nowMs = 0;
let liveVersion = 0;

test.beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = E2E.redisPrefix;
  const db = createDb(E2E.databaseUrl);
  const redis = createRedisClient({ url: E2E.redisUrl, commandTimeoutMs: 5_000 });
  try {
    // Live: the demo policy (other specs may have published changes); draft: the change under test.
    await applyPolicyFile(db, DEMO, { actor: "e2e-justify" });
    liveVersion = (await publishPolicy({ db, redis }, { actor: "e2e-justify", note: "demo policy for justify" })).version;
    await applyPolicyFile(db, JUSTIFY_DRAFT, { actor: "e2e-justify" });
    nowMs = Date.now();
    // Playwright runs beforeAll again in a new worker after a failed test: seed once per run.
    if ((await db.certificationReport.count({ where: { version: liveVersion } })) > 0) return;
    // Recorded usage, 3 h to 2 h ago (outside the other specs' 1 h dashboards): globex's ci key 30
    // orders-read a minute, acme's ci key 2 a minute; 90 minutes in, one minute of four umbrella
    // keys at 10, 20, 30 and 40 (the advisor's hand-computed case).
    const start = Math.floor((nowMs - 3 * 3_600_000) / MIN) * MIN;
    const minutes: UsageMinute[] = [];
    for (let m = 0; m < 60; m++) {
      minutes.push(allowedMinute(start + m * MIN, [
            { tenant: "globex", tier: "pro", operation: "orders-read", keyPrefix: GLOBEX_CI, count: 30 },
            { tenant: "acme", tier: "free", operation: "orders-read", keyPrefix: ACME_CI, count: 2 },
          ]),
      );
    }
    minutes.push(allowedMinute(
          // after the first whole hour of minute rows: the advisor reads hour rows before it
          start + 90 * MIN,
          [10, 20, 30, 40].map((count, i) => ({ tenant: "umbrella", tier: "enterprise", operation: "catalog", keyPrefix: `e2eadv00000${i}`, count })),
        ),
    );
    // The accuracy meter: this minute, free's per-key counter admitted 130 sampled requests where
    // the exact log admitted 120 (8.3% apart, over the default 5% tolerance).
    const meter = allowedMinute(Math.floor(nowMs / MIN) * MIN, []);
    meter.accuracy = [
      { tier: "free", limit: "free-api_key", what: "sampled", count: 200 },
      { tier: "free", limit: "free-api_key", what: "limit", count: 130 },
      { tier: "free", limit: "free-api_key", what: "exact", count: 120 },
    ];
    minutes.push(meter);
    await db.$transaction(async (tx) => {
      for (const m of minutes) await insertRollupRows(tx, rollupRows(m));
    });
    // A certification report of the live version: one requirement failed on purpose.
    const report: CertificationReport = {
      version: liveVersion,
      checksum: "0".repeat(64),
      mode: "ephemeral",
      target: null,
      instances: 2,
      startedAt: new Date(nowMs).toISOString(),
      durationMs: 91_000,
      passed: false,
      results: [
        { requirement: "boundary", subject: "free-api_key", source: "the algorithm", expected: "100th allowed, 101st rejected", measured: "100th allowed, 101st rejected", status: "pass" },
        { requirement: "boundaryBurst", subject: "pro-orders-write-tenant", source: "requirements.operations[0]", expected: "≤ 600 + 5% across an edge", measured: "1200 across an edge", status: "fail" },
        { requirement: "instances", subject: "free-api_key", source: "default", expected: "exactly 100 over 2 instances", measured: "100", status: "pass" },
        { requirement: "rejectP95", subject: "*", source: "default", expected: "≤ 50 ms", measured: "3.1 ms", status: "pass" },
      ],
      scaled: [],
      notes: [],
    };
    await saveCertificationReport(db, { version: liveVersion, passed: false, mode: "ephemeral", target: null, instances: 2, report: JSON.parse(JSON.stringify(report)), html: formatReportHtml(report), createdAt: new Date(nowMs) });
  } finally {
    await db.$disconnect();
    redis.disconnect();
  }
});

test.afterAll(async () => {
  const db = createDb(E2E.databaseUrl);
  try {
    await applyPolicyFile(db, DEMO, { actor: "e2e-justify" }); // the draft back as the other specs expect it
  } finally {
    await db.$disconnect();
  }
});

test("the replay panel on the draft's diff predicts the draft's 429s and quota run-outs on recorded traffic", async ({ page }) => {
  const db = createDb(E2E.databaseUrl);
  const expected = await replayDraft(db, { days: 7, nowMs: Date.now() }).finally(() => db.$disconnect());
  const pro = expected.comparison.tiers.find((t) => t.tier === "pro")!;
  // 30 a minute against 10 a minute: about two thirds denied (worked out: steady state admits 10 of 30).
  expect(pro.liveShare).toBe(0);
  // Other specs' pro traffic shares this run's database (0.72 in one full run), so the band is wider than the seeded data alone.
  expect(pro.draftShare).toBeGreaterThan(0.6);
  expect(pro.draftShare).toBeLessThan(0.8);

  await signIn(page, "product");
  await page.goto("/policy");
  const panel = page.getByTestId("replay-panel");
  await expect(panel.getByTestId("replay-limits")).toContainText("spreads a subject's requests of one operation evenly over their minute");
  // Bad input names the field.
  await panel.getByLabel(/Days to replay/).fill("0");
  await panel.getByRole("button", { name: "Replay" }).click();
  await expect(panel.getByTestId("replay-error")).toHaveText("Days to replay: expected 1 to 30 days");
  await panel.getByLabel(/Days to replay/).fill("7");
  await panel.getByRole("button", { name: "Replay" }).click();
  await expect(panel.getByTestId("replay-summary")).toContainText(`live v${liveVersion} and the draft`);
  const proRow = panel.getByTestId("replay-tiers").getByRole("row").filter({ hasText: /^pro/ });
  await expect(proRow).toContainText(`${(pro.draftShare * 100).toFixed(1)}%`);
  await expect(proRow.getByRole("cell").nth(2)).toHaveText("0.0%");
  await expect(panel.getByTestId("replay-newly-limited-tenants")).toContainText("globex");
  await expect(panel.getByTestId("replay-newly-limited-keys")).toContainText(`globex/${GLOBEX_CI}`);
  await expect(panel.getByTestId("replay-freed-tenants")).toContainText("None.");
  // Whether acme's draft quota of 1,000 a month runs out this month depends on the day of the month:
  // the replay projects at the month-to-date rate (lib/policy/quota-projection.ts, the tenant page's
  // projection; its arithmetic is pinned with a fixed clock in
  // lib/services/justify/justify-prove-ui.int.test.ts). The panel shows what the replay computes.
  const quotas = panel.getByTestId("replay-quotas");
  const acme = quotas.getByRole("row").filter({ hasText: "acme" });
  const q = expected.quotas.newlyRunningOut.find((x) => x.tenant === "acme");
  if (q) await expect(acme).toContainText(q.draftRunsOutOn);
  else if (expected.quotas.newlyRunningOut.length === 0) await expect(quotas).toContainText("No tenant runs out of a monthly quota earlier");
  else await expect(acme).toHaveCount(0);
  await expect(panel.getByTestId("replay-notes")).toContainText("scope ip) are not replayed");
  await screenshots(page, "prove-replay");
});

test("the simulator has the replay too, with its tenant highlighted", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto("/simulator?tenant=globex");
  const panel = page.getByTestId("replay-panel");
  await panel.getByRole("button", { name: "Replay" }).click();
  await expect(panel.getByTestId("replay-tenants").locator("tr.bg-indigo-50")).toContainText("globex");
});

test("the limit advisor gives hand-computed percentiles and a proposed limit's denials; capacity gives the cap", async ({ page }) => {
  await signIn(page, "sre");
  await page.goto("/advisor?tier=enterprise&operation=catalog&scope=api_key&limit=abc&per=minute");
  await expect(page.getByTestId("advisor-errors")).toHaveText("Proposed limit: expected a whole number ≥ 1");
  // Four keys whose busiest minutes are 10, 20, 30, 40: nearest rank p50 = 2nd = 20, p95 = p99 = max = 40;
  // per second at least ⌈peak / 60⌉ = 1. A limit of 25 a minute denies 5 + 15 = 20 of 100, two keys.
  await page.goto("/advisor?tier=enterprise&operation=*&scope=api_key&limit=25&per=minute");
  const perMinute = page.getByTestId("advisor-per-minute").getByRole("cell");
  await expect(perMinute).toHaveText(["requests per minute (busiest minute)", "20", "40", "40", "40"]);
  await expect(page.getByTestId("advisor-per-second").getByRole("cell")).toHaveText(["requests per second (at least)", "1", "1", "1", "1"]);
  await expect(page.getByTestId("advisor-proposed")).toContainText("would have denied 20.0% of last month's requests (20 of 100) and denied 2 of 4 subjects");
  await screenshots(page, "prove-advisor");

  const capacity = page.getByTestId("capacity-panel");
  await capacity.getByLabel("Downstream capacity (requests/s)").fill("100");
  await capacity.getByLabel("Target utilisation (%)").fill("150");
  await expect(capacity.getByTestId("capacity-errors")).toHaveText("Target utilisation (%): expected a percentage in (0, 100]");
  await capacity.getByLabel("Target utilisation (%)").fill("70");
  await capacity.getByLabel("Cap window").fill("1m");
  // ⌊100 × 0.7 × 60⌋ = 4,200 a minute.
  await expect(capacity.getByTestId("capacity-cap-value")).toContainText("4,200 requests per 1m");
  await expect(capacity.getByTestId("capacity-tiers").getByRole("row")).toHaveCount(4);
});

test("the NFR page is the table sluice nfr prints, and the download is its markdown", async ({ page }) => {
  const db = createDb(E2E.databaseUrl);
  const rows = await readPublishedVersion(db).then(nfrRowsOf).finally(() => db.$disconnect());
  await signIn(page, "billing");
  await page.goto("/nfr");
  await expect(page.getByTestId("nfr-version")).toContainText(`Policy v${liveVersion}`);
  await expect(page.getByTestId("nfr-row")).toHaveCount(rows.length);
  const i = rows.findIndex((r) => r.tier === "free" && r.kind === "limit" && r.scope === "api_key" && r.tenant === null);
  const freeKey = page.getByTestId("nfr-row").nth(i);
  await expect(freeKey).toContainText("100 per 1m");
  await expect(freeKey).toContainText(rows[i]!.boundary);
  expect(rows[i]!.boundary).toContain("the 100th request is allowed, the 101st rejected");
  const md = await page.request.get(`/nfr/export?version=${liveVersion}&format=markdown`);
  expect(md.status()).toBe(200);
  expect(await md.text()).toContain(`# Non-functional requirements — policy v${liveVersion}`);
  expect((await page.request.get("/nfr/export?version=abc")).status()).toBe(400);
  await page.goto("/nfr?version=0");
  await expect(page.getByTestId("nfr-error")).toHaveText("version: expected a version number ≥ 1");
  await page.goto("/nfr");
  await screenshots(page, "prove-nfr");
});

test("a version's certification shows pass / fail per requirement and links to the readable report", async ({ page }) => {
  await signIn(page, "sre");
  await page.goto("/policy");
  const cell = page.getByTestId(`certification-v${liveVersion}`);
  await expect(cell).toContainText("failed");
  await expect(cell).toContainText("3 pass · 1 fail");
  await cell.locator("summary").click();
  await expect(cell.locator('[data-status="fail"]')).toContainText("burst at a window edge");
  await expect(cell.locator('[data-status="fail"]')).toContainText("pro-orders-write-tenant");
  await expect(cell.locator('[data-status="pass"]')).toHaveCount(3);
  await screenshots(page, "prove-certification-version");
  await cell.getByRole("link", { name: /^Report of/ }).click();
  await expect(page.getByTestId("certification-verdict")).toContainText("Not certified");
  await expect(page.getByTestId("certification-results").locator('tr[data-status="fail"]')).toContainText("1200 across an edge");
  const href = await page.getByTestId("certification-readable").getAttribute("href");
  const html = await page.request.get(href!);
  expect(html.status()).toBe(200);
  expect(html.headers()["content-type"]).toContain("text/html");
  expect(await html.text()).toContain(`<h1>Certification of policy v${liveVersion}</h1>`);
  await screenshots(page, "prove-certification-report");
  expect((await page.request.get("/certify/cert_00000000000000000000/report")).status()).toBe(404);
});

test("the dashboards show approximation vs exact log per limit, flagged over the tolerance", async ({ page }) => {
  await signIn(page, "sre");
  await page.goto("/dashboards?range=1h");
  const row = page.getByTestId("accuracy-row").filter({ hasText: "free-api_key" });
  await expect(row).toHaveAttribute("data-over", "true");
  // The seeded rows alone give 200 / 130 / 120 / 8.3%; other specs' sampled traffic in this run's
  // database adds to them in a full run, so the cells that depend only on the policy are exact.
  const cells = row.getByRole("cell");
  await expect(cells.nth(0)).toHaveText("free");
  await expect(cells.nth(1)).toHaveText("free-api_key");
  await expect(cells.nth(6)).toHaveText("5.0%");
  const divergence = Number((await cells.nth(5).innerText()).replace("%", ""));
  expect(divergence).toBeGreaterThan(5);
  await page.getByTestId("accuracy-panel").scrollIntoViewIfNeeded();
  await page.getByTestId("accuracy-panel").screenshot({ path: "docs/screenshots/prove-accuracy-1280.png" });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByTestId("accuracy-panel").screenshot({ path: "docs/screenshots/prove-accuracy-390.png" });
});

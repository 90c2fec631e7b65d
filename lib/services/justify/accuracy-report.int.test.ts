/**
 * The accuracy meter's counts in the rollups, read back per limit against the live policy's
 * tolerance, and the alert that fires when a limit's admissions diverge from the exact log by more.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { compileFixture } from "@/lib/decision/testing/fixture";
import { evaluateAlerts } from "@/lib/jobs/alerts";
import { accuracyByLimit } from "./accuracy-report";

const NOW = Date.UTC(2026, 11, 3, 12, 0, 30);
const MIN = 60_000;
const stores = freshDatabasePerFile();
let db: PrismaClient;

beforeAll(async () => {
  ({ db } = stores);
  const { doc } = compileFixture({
    version: 1,
    operations: [],
    tiers: [
      {
        name: "t",
        limits: [
          { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 100, window: "1m" },
          { operation: "*", scope: "tenant", algorithm: "sliding_window_counter", limit: 1000, window: "1m" },
          { operation: "*", scope: "ip", algorithm: "fixed_window", limit: 100, window: "1m" },
        ],
      },
    ],
    tenants: [{ slug: "a", name: "A", tier: "t" }],
    requirements: { limits: [{ tier: "t", operation: "*", scope: "tenant", accuracy: "10%" }] },
  });
  await db.policyVersion.create({ data: { version: 1, document: JSON.parse(JSON.stringify(doc)), checksum: doc.checksum, author: "test", createdAt: new Date(NOW - 3_600_000) } });
  const rows: { granularity: string; bucketStart: Date; tenant: string; tier: string; operation: string; outcome: string; keyPrefix: string; count: bigint }[] = [];
  for (let m = 1; m <= 10; m++) {
    const bucketStart = new Date(Math.floor(NOW / MIN) * MIN - m * MIN);
    const add = (limit: string, outcome: string, count: number) => rows.push({ granularity: "minute", bucketStart, tenant: "", tier: "t", operation: `accuracy:${limit}`, outcome, keyPrefix: "", count: BigInt(count) });
    // per key: 108 vs 100 admitted a minute (8% > the default 5%)
    add("t-api_key", "sampled", 150);
    add("t-api_key", "limit", 108);
    add("t-api_key", "exact", 100);
    // per tenant: 8% as well, but its tolerance is 10%
    add("t-tenant", "sampled", 150);
    add("t-tenant", "limit", 108);
    add("t-tenant", "exact", 100);
    // a fixed window whose edge bursts are allowed: not held to the log, however far apart
    add("t-ip", "sampled", 300);
    add("t-ip", "limit", 200);
    add("t-ip", "exact", 100);
  }
  await db.usageRollup.createMany({ data: rows });
});
describe("approximation vs exact log", () => {
  it("sums the meter's counts per limit beside the live policy's tolerance", async () => {
    const rows = await accuracyByLimit(db, { fromMs: NOW - 3_600_000, toMs: NOW, granularity: "minute" });
    expect(rows).toEqual([
      { tier: "t", limit: "t-api_key", sampled: 1_500, limitAdmitted: 1_080, exactAdmitted: 1_000, divergence: 0.08, tolerance: 0.05 },
      { tier: "t", limit: "t-ip", sampled: 3_000, limitAdmitted: 2_000, exactAdmitted: 1_000, divergence: 1, tolerance: null },
      { tier: "t", limit: "t-tenant", sampled: 1_500, limitAdmitted: 1_080, exactAdmitted: 1_000, divergence: 0.08, tolerance: 0.1 },
    ]);
  });

  it("alerts on a limit whose admissions diverge by more than its tolerance, and on no other", async () => {
    const opened = await evaluateAlerts(db, { nowMs: NOW });
    const accuracy = opened.filter((a) => a.kind === "accuracy_divergence");
    expect(accuracy.map((a) => a.subject)).toEqual(["limit:t-api_key"]);
    expect(accuracy[0]!.message).toBe("t-api_key admitted 1080 sampled requests in 15 min where an exact sliding-window log admits 1000 (8.0% apart; tolerance 5.0%)");
    expect(accuracy[0]!.policyVersion).toBe(1);
  });
});

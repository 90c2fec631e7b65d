import { describe, expect, it } from "vitest";
import { compileFixture } from "../../decision/testing/fixture";
import type { PolicyFileInput } from "../../policy/policy-file";
import { cellsFromRecorded, compareReplays, replayUsage, splitProportionally } from "./replay";
import { projectQuota } from "@/lib/policy/quota-projection";
import { projectMonthQuotas } from "./replay-quotas";

const policy = (limit: number, quota = 100_000): PolicyFileInput => ({
  version: 1,
  operations: [{ name: "read", match: ["GET /r"] }, { name: "write", match: ["POST /w"] }],
  tiers: [
    {
      name: "t",
      limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit, window: "1m" }],
      quotas: [{ operation: "*", period: "month", limit: quota }],
    },
  ],
  tenants: [{ slug: "a", name: "A", tier: "t" }, { slug: "b", name: "B", tier: "t" }],
});

describe("replay: from the recorded rows to requests", () => {
  it("splits a key's minute over its tenant's operations in proportion, whole numbers summing to the key's count", () => {
    expect(splitProportionally(10, [{ operation: "read", count: 30 }, { operation: "write", count: 10 }])).toEqual([["read", 8], ["write", 2]]);
    expect(splitProportionally(3, [{ operation: "a", count: 1 }, { operation: "b", count: 1 }, { operation: "c", count: 1 }])).toEqual([["a", 1], ["b", 1], ["c", 1]]);
    const cells = cellsFromRecorded([
      {
        bucketStartMs: 0,
        tenantOperations: [{ tenant: "a", operation: "read", count: 9 }, { tenant: "a", operation: "write", count: 3 }],
        keys: [{ tenant: "a", keyPrefix: "k1", count: 8 }, { tenant: "a", keyPrefix: "k2", count: 2 }],
      },
    ]);
    // k1: 6 read, 2 write; k2: 2 read (1.5 + 0.5: the larger remainder wins); 2 requests without a key row go to `_`
    expect(cells.map((c) => [c.keyPrefix, c.operation, c.count])).toEqual([["k1", "read", 6], ["k1", "write", 2], ["k2", "read", 2], ["_", "read", 2]]);
    expect(cells.reduce((s, c) => s + c.count, 0)).toBe(12);
  });

  it("replays through a version and says which tenants and keys the draft newly limits or frees", async () => {
    // per minute: a's key k1 sends 30, b's key k2 sends 8
    const cells = [0, 1, 2].flatMap((m) => [
      { bucketStartMs: m * 60_000, tenant: "a", keyPrefix: "aaaaaaaaaaaa", operation: "read", count: 30 },
      { bucketStartMs: m * 60_000, tenant: "b", keyPrefix: "bbbbbbbbbbbb", operation: "read", count: 8 },
    ]);
    const live = await replayUsage(compileFixture(policy(25)).doc, cells);
    const draft = await replayUsage(compileFixture(policy(5)).doc, cells);
    expect(live.tenants.a).toMatchObject({ requests: 90, limited: 15 });
    expect(live.tenants.b).toMatchObject({ requests: 24, limited: 0 });
    expect(draft.tenants.b).toMatchObject({ limited: 9 });
    const diff = compareReplays(live, draft);
    expect(diff.newlyLimitedTenants.map((t) => t.subject)).toEqual(["b"]);
    expect(diff.newlyLimitedKeys.map((t) => t.subject)).toEqual(["b/bbbbbbbbbbbb"]);
    expect(diff.tiers).toEqual([{ tier: "t", requests: 114, liveShare: 15 / 114, draftShare: (75 + 9) / 114 }]);
    const looser = compareReplays(draft, await replayUsage(compileFixture(policy(100)).doc, cells));
    expect(looser.freedTenants.map((t) => t.subject)).toEqual(["a", "b"]);
  });

  it("names the run-out day the tenant page names for the same use: one projection, whatever the replayed days' rate", async () => {
    // The replayed traffic runs at 100 a day; the month so far at 9,500 in 9 days.
    const cells = [{ bucketStartMs: 0, tenant: "a", keyPrefix: "aaaaaaaaaaaa", operation: "read", count: 100 }];
    const { doc } = compileFixture(policy(1_000, 10_000));
    const replay = await replayUsage(doc, cells, { bucketMs: 86_400_000 });
    const nowMs = Date.UTC(2026, 11, 10);
    const tenantPage = projectQuota(9_500, 10_000, Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1), nowMs);
    const [q] = projectMonthQuotas(doc, replay, { monthToDate: new Map([["a", new Map([["read", 9_500]])]]), nowMs });
    expect(q).toMatchObject({ tenant: "a", limit: 10_000, usedSoFar: 9_500, perDay: 1_056 });
    expect(q!.runsOutOn).toBe(new Date(tenantPage.runsOutAt!).toISOString().slice(0, 10));
    expect(q!.runsOutOn).toBe("2026-12-10");
    // 1,000 in 9 days does not reach 10,000 this month, on either page.
    const [later] = projectMonthQuotas(doc, replay, { monthToDate: new Map([["a", new Map([["read", 1_000]])]]), nowMs });
    expect(later!.runsOutOn).toBeNull();
    expect(projectQuota(1_000, 10_000, Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1), nowMs).runsOutAt).toBeNull();
  });
});

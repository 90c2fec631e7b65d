import { describe, expect, it } from "vitest";
import type { UsageQuotaRow } from "../policy/tenant-usage-answer";
import { notificationId, notificationsFor } from "./quota-notify";

const row = (over: Partial<UsageQuotaRow> = {}): UsageQuotaRow => ({
  name: "pro-month", quotaId: "q1", operation: "*", period: "month", limit: 1000, used: 850, remaining: 150, overage: "block", overageUnits: 0,
  resetAtMs: 0, resetSeconds: 0, periodStart: "2026-03-15T07:00:00.000Z", periodEnd: "2026-04-15T07:00:00.000Z", periodLabel: "2026-03-15@America/Los_Angeles",
  thresholds: [80, 100], thresholdsCrossed: [80], ...over,
});

describe("which notifications a quota calls for", () => {
  it("one per threshold crossed, with an id stable for the tenant, quota, period, kind, threshold and limit", () => {
    const [n] = notificationsFor("acme", row(), undefined, 1);
    expect(n).toMatchObject({ kind: "threshold", threshold: 80, period: "2026-03-15@America/Los_Angeles", id: notificationId("acme", "q1", "2026-03-15@America/Los_Angeles", "threshold", 80, 1000) });
    expect(notificationsFor("acme", row(), undefined, 999)[0]!.id).toBe(n!.id);
    expect(JSON.parse(n!.event)).toMatchObject({ specversion: "1.0", id: n!.id, type: "dev.sluice.quota.threshold_crossed.v1", data: { threshold: 80, used: 850, limit: 1000 } });
  });

  it("recovered when a new period starts, or when a raised quota is no longer over what was warned about", () => {
    const newPeriod = notificationsFor("acme", row({ used: 0, thresholdsCrossed: [] }), { period: "2026-02-15@America/Los_Angeles", limit: 1000, threshold: 100 }, 1);
    expect(newPeriod.map((n) => n.kind)).toEqual(["recovered"]);
    const raised = notificationsFor("acme", row({ limit: 2000, used: 1000, thresholdsCrossed: [] }), { period: "2026-03-15@America/Los_Angeles", limit: 1000, threshold: 100 }, 1);
    expect(raised.map((n) => n.kind)).toEqual(["recovered"]);
    // Raised, but still over the threshold warned about: not recovered.
    expect(notificationsFor("acme", row({ limit: 1100, used: 1100, thresholdsCrossed: [80, 100] }), { period: "2026-03-15@America/Los_Angeles", limit: 1000, threshold: 100 }, 1).map((n) => n.kind)).toEqual(["threshold", "threshold"]);
    // Lowered: not recovered either.
    expect(notificationsFor("acme", row({ limit: 900, used: 10, thresholdsCrossed: [] }), { period: "2026-03-15@America/Los_Angeles", limit: 1000, threshold: 80 }, 1)).toEqual([]);
  });
});

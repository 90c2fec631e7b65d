import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Statement } from "./statement";
import { renderStatement } from "./billing-format";
import { idempotencyKey, renderLago, renderOpenMeter, renderOrb } from "./billing-meter-formats";

/** A closed November: acme moved from free to pro on day 10 (two lines with their dates), globex has a late adjustment. */
const statement: Statement = {
  period: "2026-11",
  status: "final",
  revision: 1,
  lines: [
    { tenant: "acme", tenantName: "Acme", tier: "free", tierHistory: [{ tier: "free", from: "2026-11-01", to: "2026-11-09" }, { tier: "pro", from: "2026-11-10", to: "2026-11-30" }], quotaId: "qfree", operation: "*", quotaPeriod: "month", limit: 10_000, overage: "block", used: 7_000, overageUnits: 0, denied: 0, tenantOverride: false },
    { tenant: "acme", tenantName: "Acme", tier: "pro", tierHistory: [{ tier: "free", from: "2026-11-01", to: "2026-11-09" }, { tier: "pro", from: "2026-11-10", to: "2026-11-30" }], quotaId: "qpro", operation: "*", quotaPeriod: "month", limit: 1_000_000, overage: "bill", used: 50_000, overageUnits: 0, denied: 0, tenantOverride: false },
    { tenant: "globex", tenantName: "Globex", tier: "pro", tierHistory: [], quotaId: "qpro", operation: "*", quotaPeriod: "month", limit: 1_000_000, overage: "bill", used: 1_200_000, overageUnits: 200_000, denied: 0, tenantOverride: false },
  ],
  adjustments: [{ revision: 1, tenant: "globex", tenantName: "Globex", tier: "pro", tierHistory: [], quotaId: "qpro", operation: "*", quotaPeriod: "month", limit: 1_000_000, overage: "bill", used: 5, overageUnits: 5, denied: 0, tenantOverride: false }],
};

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

describe("exports billing systems ingest", () => {
  it("are byte-stable: the same statement renders to the same bytes (pinned)", () => {
    for (const format of ["openmeter", "lago", "orb"] as const) expect(renderStatement(statement, format)).toBe(renderStatement(structuredClone(statement), format));
    expect(sha(renderOpenMeter(statement))).toMatchInlineSnapshot(`"9b5ecd5a4ae7726fbc190ce2d42650ae39412765ae9fdfd73a6f21b2a0d4ac76"`);
    expect(sha(renderLago(statement))).toMatchInlineSnapshot(`"1c215d445ec56012624c29dc9441c56b10e5a652d502d5289656d3c6f7978bb9"`);
    expect(sha(renderOrb(statement))).toMatchInlineSnapshot(`"58f56b94dcce98708611a66c4f874409f9e51204acc67a8fa13b0e248d197a08"`);
  });

  it("carry idempotency keys of (tenant, quota, period, line) only: a re-export with grown figures keeps them", () => {
    const again = structuredClone(statement);
    again.lines[0]!.used = 9_999;
    const keys = (body: string) => (JSON.parse(body) as { events: { idempotency_key: string }[] }).events.map((e) => e.idempotency_key);
    expect(keys(renderOrb(again))).toEqual(keys(renderOrb(statement)));
    expect(new Set(keys(renderOrb(statement))).size).toBe(4);
    expect(keys(renderOrb(statement))[0]).toBe(idempotencyKey("acme", "qfree", "2026-11", "usage"));
    const lago = JSON.parse(renderLago(statement)).events.map((e: { transaction_id: string }) => e.transaction_id);
    const om = JSON.parse(renderOpenMeter(statement)).map((e: { id: string }) => e.id);
    expect(lago).toEqual(keys(renderOrb(statement)));
    expect(om).toEqual(lago);
  });

  it("a tier change mid-month is two lines with their dates; each format maps customer, metric, quantity, timestamp", () => {
    const orb = JSON.parse(renderOrb(statement)).events;
    expect(orb[0]).toMatchObject({ external_customer_id: "acme", event_name: "sluice_quota_units", timestamp: "2026-11-09T23:59:59.999Z", properties: { tier: "free", from: "2026-11-01", to: "2026-11-09", units: 7_000, line: "usage" } });
    expect(orb[1]).toMatchObject({ timestamp: "2026-11-30T23:59:59.999Z", properties: { tier: "pro", from: "2026-11-10", to: "2026-11-30", units: 50_000 } });
    expect(orb[3].properties).toMatchObject({ line: "adjustment-1", units: 5, from: "2026-11-01", to: "2026-11-30" });
    const lago = JSON.parse(renderLago(statement)).events;
    expect(lago[0]).toMatchObject({ external_customer_id: "acme", code: "sluice_quota_units", timestamp: Date.UTC(2026, 10, 9, 23, 59, 59) / 1000 });
    const om = JSON.parse(renderOpenMeter(statement));
    expect(om[2]).toMatchObject({ specversion: "1.0", type: "sluice_quota_units", subject: "globex", data: { units: 1_200_000, overage_units: 200_000 } });
  });

  it("renders an open (provisional) month as an empty batch: nothing reaches a billing system before the close", () => {
    const open = { ...statement, status: "provisional" as const };
    expect(JSON.parse(renderLago(open))).toEqual({ events: [] });
    expect(JSON.parse(renderOrb(open))).toEqual({ events: [] });
    expect(JSON.parse(renderOpenMeter(open))).toEqual([]);
  });
});

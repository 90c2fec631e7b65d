import { describe, expect, it } from "vitest";
import { CSV_COLUMNS, PERIOD_COLUMNS, renderCloudEvents, renderCsv, renderJson, renderStatement } from "./billing-format";
import type { Statement, StatementLine } from "./statement";
import { idempotencyKey, renderOrb } from "./billing-meter-formats";

const period = { label: "2026-10-15@America/Los_Angeles", timeZone: "America/Los_Angeles", start: "2026-10-15", end: "2026-11-14", startAt: "2026-10-15T07:00:00.000Z", endAt: "2026-11-15T08:00:00.000Z" };
const base: StatementLine = { tenant: "acme", tenantName: "Acme", tier: "pro", tierHistory: [], quotaId: "qpro", operation: "*", quotaPeriod: "month", limit: 1_000, overage: "bill", used: 1_200, overageUnits: 200, denied: 0, tenantOverride: false };
/** November: acme anchored on the 15th in Los Angeles, globex on the UTC calendar month. */
const statement: Statement = {
  period: "2026-11",
  status: "final",
  revision: 0,
  lines: [
    { ...base, tierHistory: [{ tier: "free", from: "2026-10-15", to: "2026-10-24" }, { tier: "pro", from: "2026-10-25", to: "2026-11-14" }], tier: "free", quotaId: "qfree", limit: 100, overage: "block", used: 90, overageUnits: 0, billingPeriod: period },
    { ...base, tierHistory: [{ tier: "free", from: "2026-10-15", to: "2026-10-24" }, { tier: "pro", from: "2026-10-25", to: "2026-11-14" }], billingPeriod: period },
    { ...base, tenant: "globex", tenantName: "Globex" },
  ],
  adjustments: [],
};

describe("the export of a tenant on its own billing period", () => {
  it("CSV: the period's label, local dates, instants and zone after `denied`; empty on UTC-calendar lines", () => {
    const rows = renderCsv(statement).split("\r\n");
    expect(rows[0]).toBe([...CSV_COLUMNS, ...PERIOD_COLUMNS].join(","));
    expect(rows[2]).toBe("2026-11,final,usage,0,acme,Acme,pro,free:2026-10-15..2026-10-24;pro:2026-10-25..2026-11-14,qpro,*,month,1000,bill,1200,200,0,2026-10-15@America/Los_Angeles,2026-10-15,2026-11-14,2026-10-15T07:00:00.000Z,2026-11-15T08:00:00.000Z,America/Los_Angeles");
    expect(rows[3]).toBe("2026-11,final,usage,0,globex,Globex,pro,,qpro,*,month,1000,bill,1200,200,0,,,,,,");
  });

  it("a month without such a tenant renders exactly as before: no period columns, no period fields", () => {
    const plain = { ...statement, lines: [statement.lines[2]!] };
    expect(renderCsv(plain).split("\r\n")[0]).toBe(CSV_COLUMNS.join(","));
    for (const format of ["json", "cloudevents", "orb"] as const) expect(renderStatement(plain, format)).not.toContain("billingPeriod");
    expect(renderJson(plain)).not.toContain("period_label");
    expect(renderOrb(plain)).not.toContain("period_label");
  });

  it("JSON carries billingPeriod on the line and its dictionary entries", () => {
    const doc = JSON.parse(renderJson(statement)) as { lines: Array<{ billingPeriod?: unknown }>; dictionary: Record<string, unknown> };
    expect(doc.lines[1]!.billingPeriod).toEqual(period);
    expect(doc.lines[2]!.billingPeriod).toBeUndefined();
    expect(Object.keys(doc.dictionary)).toContain("billingPeriod.start");
  });

  it("CloudEvents: one id per tenant period, the event at the period's last millisecond", () => {
    const events = JSON.parse(renderCloudEvents(statement)) as Array<{ id: string; time: string }>;
    expect(events[1]!.time).toBe("2026-11-15T07:59:59.999Z");
    expect(events[2]!.time).toBe("2026-11-30T23:59:59.999Z");
    const other = structuredClone(statement);
    other.lines[1]!.billingPeriod = { ...period, label: "2026-11-15@America/Los_Angeles" };
    expect((JSON.parse(renderCloudEvents(other)) as Array<{ id: string }>)[1]!.id).not.toBe(events[1]!.id);
  });

  it("billing systems: the idempotency key names the tenant period; from/to are its local days; a plan change keeps two dated lines", () => {
    const orb = (JSON.parse(renderOrb(statement)) as { events: Array<{ idempotency_key: string; timestamp: string; properties: Record<string, unknown> }> }).events;
    expect(orb[0]!.idempotency_key).toBe(idempotencyKey("acme", "qfree", "2026-10-15@America/Los_Angeles", "usage"));
    expect(orb[2]!.idempotency_key).toBe(idempotencyKey("globex", "qpro", "2026-11", "usage"));
    expect(orb[0]).toMatchObject({ timestamp: "2026-11-15T07:59:59.999Z", properties: { tier: "free", from: "2026-10-15", to: "2026-10-24", period: "2026-11", period_label: period.label, time_zone: "America/Los_Angeles" } });
    expect(orb[1]!.properties).toMatchObject({ tier: "pro", from: "2026-10-25", to: "2026-11-14", units: 1_200, overage_units: 200 });
    // Re-rendering (a re-export) gives the same bytes and keys.
    expect(renderOrb(structuredClone(statement))).toBe(renderOrb(statement));
  });
});

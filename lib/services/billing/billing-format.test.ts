import { describe, expect, it } from "vitest";
import { csvField, renderCloudEvents, renderCsv, renderJson, sha256Hex } from "./billing-format";
import type { Statement } from "./statement";

const statement: Statement = {
  period: "2026-11",
  status: "final",
  revision: 1,
  lines: [
    {
      tenant: "acme", tenantName: "Acme, \"Inc\"", tier: "pro", tierHistory: [{ tier: "free", from: "2026-11-01", to: "2026-11-14" }, { tier: "pro", from: "2026-11-15", to: "2026-11-30" }],
      quotaId: "q1", operation: "*", quotaPeriod: "month", limit: 100, overage: "bill", used: 130, overageUnits: 30, denied: 2, tenantOverride: true,
    },
  ],
  adjustments: [
    { revision: 1, tenant: "acme", tenantName: "Acme, \"Inc\"", tier: "pro", tierHistory: [], quotaId: "q1", operation: "*", quotaPeriod: "month", limit: 100, overage: "bill", used: 5, overageUnits: 5, denied: 0, tenantOverride: true },
  ],
};

describe("billing formats", () => {
  it("quotes CSV fields only where RFC 4180 requires it", () => {
    expect(csvField("plain")).toBe("plain");
    expect(csvField('a "b", c')).toBe('"a ""b"", c"');
    expect(csvField("line\nbreak")).toBe('"line\nbreak"');
  });

  it("renders CSV with the documented columns, CRLF ends, usage then adjustment lines, a tenant's override marked", () => {
    expect(renderCsv(statement)).toBe(
      "period,status,line_type,revision,tenant,tenant_name,tier,tier_history,quota_id,operation,quota_period,limit,overage_policy,used,overage_units,denied,tenant_override\r\n" +
        '2026-11,final,usage,0,acme,"Acme, ""Inc""",pro,free:2026-11-01..2026-11-14;pro:2026-11-15..2026-11-30,q1,*,month,100,bill,130,30,2,true\r\n' +
        '2026-11,final,adjustment,1,acme,"Acme, ""Inc""",pro,,q1,*,month,100,bill,5,5,0,true\r\n',
    );
  });

  it("adds the tenant_override column only to a month that has an override, so every other month keeps its bytes", () => {
    const plain = { ...statement, lines: statement.lines.map((l) => ({ ...l, tenantOverride: false })), adjustments: statement.adjustments.map((x) => ({ ...x, tenantOverride: false })) };
    expect(renderCsv(plain).split("\r\n")[0]).toBe("period,status,line_type,revision,tenant,tenant_name,tier,tier_history,quota_id,operation,quota_period,limit,overage_policy,used,overage_units,denied");
    expect(renderCsv(plain).split("\r\n")[1]).toMatch(/,130,30,2$/);
    expect(renderJson(plain)).not.toContain("tenantOverride");
    expect((JSON.parse(renderJson(statement)) as { lines: Array<{ tenantOverride?: boolean }> }).lines[0]!.tenantOverride).toBe(true);
  });

  it("renders the same bytes every time, and CloudEvents with stable, distinct ids", () => {
    for (const render of [renderCsv, renderJson, renderCloudEvents]) expect(sha256Hex(render(statement))).toBe(sha256Hex(render(structuredClone(statement))));
    const events = JSON.parse(renderCloudEvents(statement)) as Array<{ id: string; type: string; time: string }>;
    expect(events.map((e) => e.type)).toEqual(["dev.sluice.billing.quota_usage.v1", "dev.sluice.billing.quota_adjustment.v1"]);
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
    expect(events[0]!.time).toBe("2026-11-30T23:59:59.999Z");
    const provisional = JSON.parse(renderCloudEvents({ ...statement, status: "provisional" })) as Array<{ id: string }>;
    expect(provisional[0]!.id).not.toBe(events[0]!.id);
  });
});

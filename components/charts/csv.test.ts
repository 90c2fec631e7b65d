import { describe, expect, it } from "vitest";
import { toCsv } from "./csv";

describe("chart CSV", () => {
  it("writes a header, ISO times for t, CRLF line ends and quotes only where RFC 4180 needs them", () => {
    const csv = toCsv([{ t: Date.UTC(2026, 10, 1), tenant: 'Acme, "Inc"', n: 3 }, { t: 0, tenant: "b", n: null }], ["t", "tenant", "n"]);
    expect(csv).toBe('t,tenant,n\r\n2026-11-01T00:00:00.000Z,"Acme, ""Inc""",3\r\n1970-01-01T00:00:00.000Z,b,\r\n');
  });
});

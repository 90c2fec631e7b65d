import { describe, expect, it } from "vitest";
import { ROLES } from "../policy/types";
import { PAGES } from "./pages";
import { can } from "./permissions";
import { roleTableRows } from "./role-table";

describe("the role table on Settings (#29.9)", () => {
  it("says every role opens exactly the pages it can open", () => {
    const rows = roleTableRows();
    for (const page of PAGES) {
      const row = rows.find((r) => r.group === "page" && r.label.startsWith(`open ${page.label} `));
      expect(row, page.href).toBeDefined();
      for (const role of ROLES) expect(row!.allowed[role], `${role} ${page.href}`).toBe(can(role, page.action));
    }
  });

  it("no row denies billing or product the dashboards they open", () => {
    const dashboards = roleTableRows().filter((r) => /dashboard/i.test(r.label));
    expect(dashboards.length).toBeGreaterThan(0);
    for (const row of dashboards) {
      expect(row.allowed.billing, row.label).toBe(true);
      expect(row.allowed.product, row.label).toBe(true);
    }
  });
});

import { createElement } from "react";
import { describe, expect, it } from "vitest";
import { rowSortValue, type TableRow } from "./data-table";
import { ariaSort, compareValues, nextSort, queryHref, sortArrow, sortRows, type SortValue } from "./table-sort";

const by = <T extends SortValue>(values: T[], dir: "asc" | "desc") => sortRows(values, (v) => v, dir);

describe("sortRows", () => {
  it("sorts numbers as numbers, not as strings (2 before 10)", () => {
    expect(by([10, 2, 33, 1, 100], "asc")).toEqual([1, 2, 10, 33, 100]);
    expect(by([10, 2, 33, 1, 100], "desc")).toEqual([100, 33, 10, 2, 1]);
    expect(by([-1.5, 0, -10], "asc")).toEqual([-10, -1.5, 0]);
  });

  it("sorts dates chronologically, across months and years", () => {
    const d = (iso: string) => new Date(iso);
    const dates = [d("2026-10-02T00:00:00Z"), d("2025-12-31T23:59:59Z"), d("2026-02-01T00:00:00Z"), d("2026-09-30T12:00:00Z")];
    expect(by(dates, "asc").map((x) => x.toISOString())).toEqual([
      "2025-12-31T23:59:59.000Z",
      "2026-02-01T00:00:00.000Z",
      "2026-09-30T12:00:00.000Z",
      "2026-10-02T00:00:00.000Z",
    ]);
    expect(by(dates, "desc")[0]?.toISOString()).toBe("2026-10-02T00:00:00.000Z");
  });

  it("puts rows without a value last in both directions (null, undefined, NaN, invalid date, empty string)", () => {
    const values: SortValue[] = [3, null, 1, undefined, Number.NaN, "", 2, new Date("not a date")];
    const asc = by(values, "asc");
    const desc = by(values, "desc");
    expect(asc.slice(0, 3)).toEqual([1, 2, 3]);
    expect(desc.slice(0, 3)).toEqual([3, 2, 1]);
    for (const sorted of [asc, desc]) {
      expect(sorted.slice(3).every((v) => v === null || v === undefined || v === "" || (typeof v === "number" && Number.isNaN(v)) || (v instanceof Date && Number.isNaN(v.getTime())))).toBe(true);
    }
    // Missing values keep their original relative order too.
    expect(by([null, "b", undefined, "a"], "desc")).toEqual(["b", "a", null, undefined]);
  });

  it("is stable: rows with equal values keep their original order, in both directions", () => {
    const rows = [
      { id: "a", role: "admin" },
      { id: "b", role: "product" },
      { id: "c", role: "admin" },
      { id: "d", role: "product" },
      { id: "e", role: "admin" },
    ];
    expect(sortRows(rows, (r) => r.role, "asc").map((r) => r.id)).toEqual(["a", "c", "e", "b", "d"]);
    expect(sortRows(rows, (r) => r.role, "desc").map((r) => r.id)).toEqual(["b", "d", "a", "c", "e"]);
  });

  it("compares strings case-insensitively and naturally (key-9 before key-10), and never mutates its input", () => {
    const input = ["key-10", "Beta", "key-9", "alpha"];
    expect(by(input, "asc")).toEqual(["alpha", "Beta", "key-9", "key-10"]);
    expect(input).toEqual(["key-10", "Beta", "key-9", "alpha"]);
  });

  it("orders mixed kinds consistently instead of comparing a number with a string", () => {
    expect(compareValues(5, "4")).toBeLessThan(0);
    expect(compareValues("4", 5)).toBeGreaterThan(0);
    expect(compareValues(false, true)).toBeLessThan(0);
  });
});

describe("header state", () => {
  it("toggles the sorted column's direction and starts another column at its first direction", () => {
    expect(nextSort(null, "name")).toEqual({ key: "name", dir: "asc" });
    expect(nextSort({ key: "name", dir: "asc" }, "name")).toEqual({ key: "name", dir: "desc" });
    expect(nextSort({ key: "name", dir: "desc" }, "name")).toEqual({ key: "name", dir: "asc" });
    expect(nextSort({ key: "name", dir: "desc" }, "at", "desc")).toEqual({ key: "at", dir: "desc" });
    expect(nextSort({ key: "at", dir: "desc" }, "at", "desc")).toEqual({ key: "at", dir: "asc" });
  });

  it("sets aria-sort and the arrow on the sorted column only", () => {
    const s = { key: "name", dir: "desc" as const };
    expect(ariaSort(s, "name")).toBe("descending");
    expect(ariaSort({ key: "name", dir: "asc" }, "name")).toBe("ascending");
    expect(ariaSort(s, "email")).toBeUndefined();
    expect(ariaSort(null, "email")).toBeUndefined();
    expect(sortArrow(s, "name")).toBe("▼");
    expect(sortArrow({ key: "name", dir: "asc" }, "name")).toBe("▲");
    expect(sortArrow(s, "email")).toBe("↕");
  });
});

describe("rowSortValue", () => {
  it("sorts by the explicit value, else by a plain text or number cell, else not at all", () => {
    const row: TableRow = { key: "1", cells: { name: "ci", count: 3, badge: createElement("span", null, "active"), created: "2026-01-01 00:00 UTC" }, values: { created: 1_767_225_600_000 } };
    expect(rowSortValue(row, "name")).toBe("ci");
    expect(rowSortValue(row, "count")).toBe(3);
    expect(rowSortValue(row, "badge")).toBeNull();
    expect(rowSortValue(row, "created")).toBe(1_767_225_600_000);
  });
});

describe("queryHref", () => {
  it("drops empty values and defaults, so the default view is the bare path", () => {
    expect(queryHref("/audit", { sort: "at", dir: "desc", page: 1, actor: "" }, { sort: "at", dir: "desc", page: 1 })).toBe("/audit");
    expect(queryHref("/audit", { sort: "actor", dir: "asc", page: 2, actor: "a b" }, { sort: "at", dir: "desc", page: 1 })).toBe("/audit?sort=actor&dir=asc&page=2&actor=a+b");
  });
});

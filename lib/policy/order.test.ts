import { describe, expect, it } from "vitest";
import { orderByNames } from "./order";

describe("orderByNames", () => {
  it("puts items in the named order, the unnamed after them in their own order, dropping nothing", () => {
    expect(orderByNames(["pro", "free", "enterprise", "basic"], ["free", "basic", "pro"], (x) => x)).toEqual(["free", "basic", "pro", "enterprise"]);
    expect(orderByNames(["b", "a"], [], (x) => x)).toEqual(["b", "a"]);
    expect(orderByNames([{ n: "x" }, { n: "y" }], ["y", "gone"], (o) => o.n)).toEqual([{ n: "y" }, { n: "x" }]);
  });
});

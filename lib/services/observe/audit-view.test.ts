import { describe, expect, it } from "vitest";
import { auditDiff, nameFromRecord } from "./audit-view";

describe("audit entries as people read them", () => {
  it("lists only the fields a change touched", () => {
    expect(auditDiff({ slug: "acme", name: "Acme", tier: "free", status: "active" }, { slug: "acme", name: "Acme", tier: "pro", status: "active" })).toEqual([
      { field: "tier", before: "free", after: "pro" },
    ]);
    expect(auditDiff({ role: "product" }, { role: "billing" })).toEqual([{ field: "role", before: "product", after: "billing" }]);
    // Nested values compare by content.
    expect(auditDiff({ match: ["GET /a"] }, { match: ["GET /a"] })).toEqual([]);
  });
  it("lists what a creation set and what a deletion removed", () => {
    expect(auditDiff(null, { name: "ci", tenant: "acme" })).toEqual([
      { field: "name", after: "ci" },
      { field: "tenant", after: "acme" },
    ]);
    expect(auditDiff({ name: "ci" }, null)).toEqual([{ field: "name", before: "ci" }]);
  });
  it("names entities by their natural keys, not ids", () => {
    expect(nameFromRecord("tenant", "t_123", { slug: "globex", name: "Globex" })).toBe("globex");
    expect(nameFromRecord("limit", "l_1", { tier: "pro", operation: "*", scope: "api_key", algorithm: "sliding_window_counter" })).toBe("pro · * · api_key · sliding_window_counter");
    expect(nameFromRecord("key", "k_1", { tenant: "acme", name: "ci" })).toBe("acme · ci");
    expect(nameFromRecord("policy", "4", null)).toBe("v4");
    // A user's role change records only the role: the name comes from the user table (entityNames).
    expect(nameFromRecord("user", "u_1", { role: "billing" })).toBeNull();
  });
});

import { describe, expect, it } from "vitest";
import { approvalSchema, type ApprovalSettings } from "./approval";
import { approvalVerdict, blastRadius } from "./blast-radius";
import { compilePolicy, type PolicySpec } from "./compile";
import { parsePolicyFile } from "./policy-file";
import { cohortMembers } from "./rollout";

/** 20 tenants: 18 on free, 2 on pro. */
const base: PolicySpec = {
  version: 1,
  defaults: { failureMode: "open" },
  operations: [{ name: "orders-read", match: ["GET /v1/orders/*"], cost: 1 }],
  tiers: [
    { name: "free", weight: 1, limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 100, window: "1m", mode: "reject" }], quotas: [] },
    { name: "pro", weight: 5, limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1000, window: "1m", mode: "reject" }], quotas: [] },
  ],
  globalCaps: [{ operation: "*", limit: 10_000, window: "1s", share: "none" }],
  tenants: Array.from({ length: 20 }, (_, i) => ({ slug: `t${String(i).padStart(2, "0")}`, name: `T${i}`, tier: i < 2 ? "pro" : "free", status: "active" as const, overrides: [] })),
};

const RULE: ApprovalSettings = approvalSchema.parse({ beyondPercent: 10 });
const withRule = (spec: PolicySpec, approval: ApprovalSettings | null = RULE) => ({ ...compilePolicy(spec), ...(approval ? { approval } : {}) });
const edited = (edit: (s: PolicySpec) => void) => {
  const s = structuredClone(base);
  edit(s);
  return s;
};
const everyone = { cohort: null, adminCaller: false };

describe("the approval rule's blast radius", () => {
  it("fills in its defaults and names a bad field", () => {
    expect(approvalSchema.parse({})).toEqual({ beyondPercent: 0, globalCapChange: true, adminBypass: false });
    const bad = approvalSchema.safeParse({ beyondPercent: 120 });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]).toMatchObject({ path: ["beyondPercent"], message: "expected a percent from 0 to 100" });
    expect(approvalSchema.safeParse({ beyondPercent: 10, required: true }).success).toBe(false);
    const file = parsePolicyFile({ version: 1, approval: { beyondPercent: 120 } });
    expect(file.ok ? [] : file.issues).toEqual([{ path: "approval.beyondPercent", message: "expected a percent from 0 to 100" }]);
  });

  it("is published inside the version, so the live version's rule is known", () => {
    const parsed = parsePolicyFile({ ...base, approval: { beyondPercent: 10 } });
    expect(parsed.ok).toBe(true);
    const spec = { ...base, approval: parsed.ok ? parsed.value.approval : undefined };
    expect(compilePolicy(spec).approval).toEqual({ beyondPercent: 10, globalCapChange: true, adminBypass: false });
    expect(compilePolicy(base).approval).toBeUndefined();
  });

  it("counts only the tenants a tier change reaches: 2 pro tenants of 20 are 10%, not beyond 10%", () => {
    const live = withRule(base);
    const cand = withRule(edited((s) => (s.tiers[1]!.limits[0]!.limit = 500)));
    const radius = blastRadius(live, cand);
    expect(radius.affected).toEqual(["t00", "t01"]);
    expect(approvalVerdict(RULE, radius, everyone)).toMatchObject({ required: false, reached: 2, of: 20, reachPercent: 10 });
  });

  it("needs a second person for a change that reaches more than the radius: the free tier's 18 of 20", () => {
    const cand = withRule(edited((s) => (s.tiers[0]!.limits[0]!.limit = 50)));
    const v = approvalVerdict(RULE, blastRadius(withRule(base), cand), everyone);
    expect(v.required).toBe(true);
    expect(v.reasons).toEqual(["it reaches 18 of 20 tenants (90%), more than the 10% blast radius"]);
  });

  it("judges a rollout step by the cohort it reaches, so canaries pass and a wider step does not", () => {
    const cand = withRule(edited((s) => (s.tiers[0]!.limits[0]!.limit = 50)));
    const radius = blastRadius(withRule(base), cand);
    const canaries = cohortMembers({ salt: "ro_x", canaries: ["t05", "t06"], percent: 0 }, Object.keys(cand.tenants));
    expect(approvalVerdict(RULE, radius, { cohort: canaries, adminCaller: false })).toMatchObject({ required: false, reached: 2 });
    const half = cohortMembers({ salt: "ro_x", canaries: [], percent: 50 }, Object.keys(cand.tenants));
    expect(approvalVerdict(RULE, radius, { cohort: half, adminCaller: false }).required).toBe(true);
  });

  it("needs a second person for any global cap change whatever its reach, unless the rule says otherwise", () => {
    const cand = withRule(edited((s) => (s.globalCaps[0]!.limit = 5_000)));
    const radius = blastRadius(withRule(base), cand);
    expect(radius.globalCapsChanged).toBe(true);
    expect(approvalVerdict({ ...RULE, beyondPercent: 100 }, radius, everyone).reasons).toEqual(["it changes a global cap"]);
    expect(approvalVerdict({ ...RULE, beyondPercent: 100, globalCapChange: false }, radius, everyone).required).toBe(false);
  });

  it("treats dropping or loosening the rule itself as a change the live rule judges", () => {
    const v = approvalVerdict(RULE, blastRadius(withRule(base), withRule(base, null)), everyone);
    expect(v).toMatchObject({ required: true, reached: 0, reasons: ["it changes the approval rule itself"] });
  });

  it("lets an admin through only when the rule says adminBypass", () => {
    const radius = blastRadius(withRule(base), withRule(edited((s) => (s.tiers[0]!.limits[0]!.limit = 50))));
    expect(approvalVerdict(RULE, radius, { cohort: null, adminCaller: true }).required).toBe(true);
    expect(approvalVerdict({ ...RULE, adminBypass: true }, radius, { cohort: null, adminCaller: true }).required).toBe(false);
    expect(approvalVerdict({ ...RULE, adminBypass: true }, radius, everyone).required).toBe(true);
  });

  it("needs nothing without a rule, or for a change that reaches nobody", () => {
    const radius = blastRadius(withRule(base), withRule(edited((s) => (s.tiers[0]!.limits[0]!.limit = 50))));
    expect(approvalVerdict(undefined, radius, everyone)).toMatchObject({ required: false, reasons: [] });
    expect(approvalVerdict({ ...RULE, beyondPercent: 0 }, blastRadius(withRule(base), withRule(base)), everyone).required).toBe(false);
  });

  it("reaches everyone with an operation change, and a tenant alone with its own override", () => {
    const ops = blastRadius(withRule(base), withRule(edited((s) => (s.operations[0]!.cost = 2))));
    expect(ops.affected).toHaveLength(20);
    const one = blastRadius(withRule(base), withRule(edited((s) => s.tenants[7]!.overrides.push({ operation: "*", scope: "api_key", limit: 5 }))));
    expect(one.affected).toEqual(["t07"]);
  });
});

import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../policy/types";
import { planPolicy, type Draft, type PlanChange, type PolicyPlan } from "../policy/plan";
import { ACTION_LABELS, ACTIONS, can, deniedChanges, type Action } from "./permissions";
import { AuthError, requireRole } from "./require-role";

/**
 * The role table (docs/architecture.md "The control plane") written out independently of the table in permissions.ts: product edits and
 * publishes; sre reads policy, sets failure modes, sees dashboards; billing reads usage and
 * exports; admin everything.
 */
const EXPECTED: Record<Role, Action[]> = {
  admin: [...ACTIONS],
  product: ["policy.read", "policy.edit", "policy.publish", "keys.manage", "audit.read", "usage.read"],
  sre: ["policy.read", "failure_mode.set", "dashboards.read", "usage.read", "audit.read"],
  billing: ["policy.read", "usage.read", "billing.export"],
};

describe("role × action: every server action's authorization", () => {
  for (const role of ROLES) {
    for (const action of ACTIONS) {
      const allowed = EXPECTED[role].includes(action);
      it(`${role} ${allowed ? "may" : "may not (403)"} ${action}`, () => {
        const principal = { id: "usr_1", email: `${role}@example.com`, role };
        expect(can(role, action)).toBe(allowed);
        if (allowed) {
          expect(requireRole(principal, action)).toBe(principal);
        } else {
          expect(() => requireRole(principal, action)).toThrow(AuthError);
          try {
            requireRole(principal, action);
          } catch (error) {
            expect((error as AuthError).status).toBe(403);
          }
        }
      });
    }
  }

  it("answers 401, not 403, when nobody is signed in", () => {
    for (const action of ACTIONS) {
      try {
        requireRole(null, action);
        expect.unreachable();
      } catch (error) {
        expect((error as AuthError).status).toBe(401);
      }
    }
  });

  it("denies a role it does not know (a stale or forged token)", () => {
    expect(can("root" as Role, "policy.read")).toBe(false);
    expect(() => requireRole({ id: "x", email: "x@example.com", role: "root" as Role }, "policy.read")).toThrow(AuthError);
  });

  it("sre and billing can never change or publish policy", () => {
    for (const role of ["sre", "billing"] as const) {
      for (const action of ["policy.edit", "policy.publish", "keys.manage", "users.manage", "tokens.manage"] as const) {
        expect(can(role, action)).toBe(false);
      }
    }
  });
});

/** A draft with one Envoy domain whose one rule allows `perSecond`, with a failure mode or not. */
function envoyDraft(perSecond: number, failureMode?: "closed"): Draft {
  const rate_limit = { unit: "second", requests_per_unit: perSecond, ...(failureMode ? { failureMode } : {}) };
  const rateLimitService = { unknownDomain: "ok" as const, shadowMode: false, domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit }] }] };
  return { spec: { version: 1, defaults: { failureMode: "open" }, operations: [], tiers: [], globalCaps: [], tenants: [], rateLimitService }, keys: [] };
}

describe("role × field of the draft: what each change needs", () => {
  const change = (entity: PlanChange["entity"], before: Record<string, unknown> | null, after: Record<string, unknown> | null): PolicyPlan => ({
    created: before === null ? [{ entity, key: "k", path: "p", before: null, after } as PlanChange] : [],
    changed: before !== null && after !== null ? [{ entity, key: "k", path: "p", before, after } as PlanChange] : [],
    deleted: after === null ? [{ entity, key: "k", path: "p", before, after: null } as PlanChange] : [],
    warnings: [],
  });
  // Written out independently of FIELD_ACTIONS: failure modes are admin's and sre's, keys need
  // keys.manage, the rest policy.edit.
  const CASES: { what: string; plan: PolicyPlan; may: Role[] }[] = [
    { what: "the default failure mode", plan: change("settings", { failureMode: "open" }, { failureMode: "closed" }), may: ["admin", "sre"] },
    { what: "the first settings row, at the default", plan: change("settings", null, { failureMode: "open" }), may: ["admin", "product", "sre", "billing"] },
    { what: "the first settings row, not at the default", plan: change("settings", null, { failureMode: "local" }), may: ["admin", "sre"] },
    { what: "an operation's failure mode", plan: change("operation", { name: "x", match: [], cost: 1, position: 0 }, { name: "x", match: [], cost: 1, failureMode: "closed", position: 0 }), may: ["admin", "sre"] },
    { what: "a new operation with a failure mode", plan: change("operation", null, { name: "x", match: [], cost: 1, failureMode: "closed", position: 0 }), may: ["admin"] },
    { what: "an operation's patterns", plan: change("operation", { name: "x", match: [], cost: 1, position: 0 }, { name: "x", match: ["GET /"], cost: 1, position: 0 }), may: ["admin", "product"] },
    { what: "a limit", plan: change("limit", { limit: 1 }, { limit: 2 }), may: ["admin", "product"] },
    { what: "a tenant's status", plan: change("tenant", { status: "active" }, { status: "suspended" }), may: ["admin", "product"] },
    { what: "an override", plan: change("override", null, { tenant: "a", operation: "*", limit: 1 }), may: ["admin", "product"] },
    { what: "a key", plan: change("key", { tenant: "a", name: "k", prefix: "p" }, { tenant: "a", name: "k", prefix: "p", revoked: true }), may: ["admin", "product"] },
    { what: "an Envoy rule's failure mode", plan: planPolicy(envoyDraft(5), envoyDraft(5, "closed")), may: ["admin", "sre"] },
    { what: "an Envoy rule's limit", plan: planPolicy(envoyDraft(5), envoyDraft(6)), may: ["admin", "product"] },
  ];
  for (const { what, plan, may } of CASES) {
    for (const role of ROLES) {
      it(`${role} ${may.includes(role) ? "may" : "may not"} change ${what}`, () => {
        const denied = deniedChanges(role, plan);
        expect(denied.length === 0).toBe(may.includes(role));
        for (const d of denied) expect(d.message).toBe(`the ${role} role may not ${ACTION_LABELS[d.action]}`);
      });
    }
  }
});

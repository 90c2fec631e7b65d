import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../policy/types";
import { ACTIONS, can, type Action } from "./permissions";
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

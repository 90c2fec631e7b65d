/**
 * Who may do what in the control plane: the one role × action table (docs/architecture.md "The control plane").
 * Pages, server actions, route handlers and the admin API all ask `can()` / `requireRole()`;
 * no other file decides a permission.
 */
import type { Role } from "../policy/types";
import { ROLES } from "../policy/types";

export const ACTIONS = [
  /** Read tiers, matrix, operations, tenants, the draft and the live policy. */
  "policy.read",
  /** Edit the draft: tiers, limits, quotas, global caps, operations, tenants, overrides. */
  "policy.edit",
  /** Publish the draft or roll back to an earlier version. */
  "policy.publish",
  /** Create and revoke end clients' API keys. */
  "keys.manage",
  /** Set the default failure mode and per-operation failure modes. */
  "failure_mode.set",
  /** See the SRE dashboards. */
  "dashboards.read",
  /** Read usage series, top consumers and quota burn. */
  "usage.read",
  /** Download billing exports. */
  "billing.export",
  /** Read the audit log. */
  "audit.read",
  /** Create users and change their roles. */
  "users.manage",
  /** Create and revoke service and admin tokens. */
  "tokens.manage",
] as const;
export type Action = (typeof ACTIONS)[number];

/** The table. `admin` has every action; the others exactly what docs/architecture.md gives them. */
export const PERMISSIONS: Readonly<Record<Role, ReadonlySet<Action>>> = {
  admin: new Set(ACTIONS),
  product: new Set<Action>(["policy.read", "policy.edit", "policy.publish", "keys.manage", "audit.read", "usage.read"]),
  sre: new Set<Action>(["policy.read", "failure_mode.set", "dashboards.read", "usage.read", "audit.read"]),
  billing: new Set<Action>(["policy.read", "usage.read", "billing.export"]),
};

export function can(role: Role | null | undefined, action: Action): boolean {
  if (!role || !(ROLES as readonly string[]).includes(role)) return false;
  return PERMISSIONS[role].has(action);
}

/** Human wording for the settings page and 403 messages. */
export const ACTION_LABELS: Record<Action, string> = {
  "policy.read": "read the policy",
  "policy.edit": "edit the draft policy",
  "policy.publish": "publish or roll back the policy",
  "keys.manage": "create and revoke API keys",
  "failure_mode.set": "set failure modes",
  "dashboards.read": "see dashboards",
  "usage.read": "read usage",
  "billing.export": "export billing data",
  "audit.read": "read the audit log",
  "users.manage": "manage users",
  "tokens.manage": "manage service and admin tokens",
};

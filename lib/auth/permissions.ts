/**
 * Who may do what in the control plane: the one role × action table (docs/architecture.md "The control plane").
 * Pages, server actions, route handlers and the admin API all ask `can()` / `requireRole()`;
 * no other file decides a permission.
 */
import { changedFields, type PlanChange, type PlanEntity, type PlanRecords, type PolicyPlan } from "../policy/plan";
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
  /** Act on the dashboards' alerts: acknowledge and silence them, edit the alert rules (reading dashboards is usage.read). */
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
  "dashboards.read": "acknowledge and silence alerts, edit alert rules",
  "usage.read": "read usage (Dashboards, Billing, Advisor)",
  "billing.export": "export billing data",
  "audit.read": "read the audit log",
  "users.manage": "manage users",
  "tokens.manage": "manage service and admin tokens",
};

/**
 * What a change to each field of the draft needs, whatever path it comes by (a UI form, a policy
 * file through the CLI or the admin API): failure modes are the SRE's (failure_mode.set), API keys
 * need keys.manage, everything else policy.edit. Every edit checks every field it changes here
 * (lib/services/policy/edit-policy.ts), so a form that happens to carry a failure mode cannot be used to
 * set one.
 */
export const FIELD_ACTIONS: { [E in PlanEntity]: { default: Action; fields?: Partial<Record<keyof PlanRecords[E], Action>> } } = {
  settings: { default: "policy.edit", fields: { failureMode: "failure_mode.set" } },
  requirements: { default: "policy.edit" },
  approval: { default: "policy.edit" },
  operation: { default: "policy.edit", fields: { failureMode: "failure_mode.set" } },
  tier: { default: "policy.edit" },
  limit: { default: "policy.edit" },
  quota: { default: "policy.edit" },
  globalCap: { default: "policy.edit" },
  tenant: { default: "policy.edit" },
  override: { default: "policy.edit" },
  key: { default: "keys.manage" },
  envoySettings: { default: "policy.edit" },
  envoyDomain: { default: "policy.edit", fields: { failureModes: "failure_mode.set" } },
};

/** What a missing row means, for the fields a creation sets: no settings row reads as `open`. */
const IMPLICIT_BEFORE: Partial<Record<PlanEntity, Record<string, unknown>>> = { settings: { failureMode: "open" } };

export interface DeniedChange {
  /** The field in the file's notation: `operations[3].failureMode`, `defaults.failureMode`. */
  field: string;
  action: Action;
  message: string;
}

/** Every field `plan` changes that `role` may not change, with the action it would need. */
export function deniedChanges(role: Role, plan: PolicyPlan): DeniedChange[] {
  const denied: DeniedChange[] = [];
  const check = (c: PlanChange) => {
    const table = FIELD_ACTIONS[c.entity] as { default: Action; fields?: Record<string, Action> };
    const implicit = c.before === null ? IMPLICIT_BEFORE[c.entity] : undefined;
    for (const field of changedFields(c, implicit)) {
      const action = table.fields?.[field] ?? table.default;
      if (!can(role, action)) {
        denied.push({ field: `${c.path}.${field}`, action, message: `the ${role} role may not ${ACTION_LABELS[action]}` });
      }
    }
  };
  for (const c of [...plan.created, ...plan.changed, ...plan.deleted]) check(c);
  return denied;
}

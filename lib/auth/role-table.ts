/**
 * The Settings page's role table, from the two tables that decide: every action (PERMISSIONS) and
 * every page (PAGES, what the menu and each page ask). A row says what a role can actually do or
 * open, so the table cannot claim a role is shut out of a page it opens.
 */
import { ROLES, type Role } from "../policy/types";
import { PAGES } from "./pages";
import { ACTION_LABELS, ACTIONS, can } from "./permissions";

export interface RoleTableRow {
  group: "page" | "action";
  label: string;
  allowed: Record<Role, boolean>;
}

const allowedFor = (check: (role: Role) => boolean) => Object.fromEntries(ROLES.map((r) => [r, check(r)])) as Record<Role, boolean>;

export function roleTableRows(): RoleTableRow[] {
  return [
    ...PAGES.map((p) => ({ group: "page" as const, label: `open ${p.label} (${p.href})`, allowed: allowedFor((r) => can(r, p.action)) })),
    ...ACTIONS.map((a) => ({ group: "action" as const, label: ACTION_LABELS[a], allowed: allowedFor((r) => can(r, a)) })),
  ];
}

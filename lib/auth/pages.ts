/**
 * Which action opens each page of the control plane: the navigation lists a page only for roles
 * that may open it, and the pages ask the same table (`pageAccess(PAGE_ACTIONS[path], …)`), so the
 * menu and the pages cannot disagree. Dashboards and Billing are usage: every role that may read
 * usage opens them (the billing exports themselves need billing.export; alert actions dashboards.read).
 * e2e/page-roles.spec.ts walks every page × role against this table.
 */
import type { Role } from "../policy/types";
import { can, type Action } from "./permissions";

export const PAGES = [
  { href: "/", label: "Overview", action: "policy.read" },
  { href: "/tenants", label: "Tenants", action: "policy.read" },
  { href: "/tiers", label: "Tiers", action: "policy.read" },
  { href: "/operations", label: "Operations", action: "policy.read" },
  { href: "/policy", label: "Policy", action: "policy.read" },
  { href: "/envoy", label: "Envoy", action: "policy.read" },
  { href: "/nfr", label: "Requirements", action: "policy.read" },
  { href: "/simulator", label: "Simulator", action: "policy.read" },
  { href: "/advisor", label: "Advisor", action: "usage.read" },
  { href: "/dashboards", label: "Dashboards", action: "usage.read" },
  { href: "/billing", label: "Billing", action: "usage.read" },
  { href: "/audit", label: "Audit", action: "audit.read" },
  { href: "/settings", label: "Settings", action: "policy.read" },
] as const satisfies readonly { href: string; label: string; action: Action }[];

export type PagePath = (typeof PAGES)[number]["href"];

export const PAGE_ACTIONS = Object.fromEntries(PAGES.map((p) => [p.href, p.action])) as Record<PagePath, Action>;

/** The pages `role` may open, in menu order. */
export function pagesFor(role: Role): { href: string; label: string }[] {
  return PAGES.filter((p) => can(role, p.action)).map(({ href, label }) => ({ href, label }));
}

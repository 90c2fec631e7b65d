import type { ReactNode } from "react";
import type { Principal } from "@/lib/auth/require-role";
import { NavLink } from "./nav-link";
import { SignOutButton } from "./sign-out-button";

export const NAV_ITEMS = [
  { href: "/", label: "Overview" },
  { href: "/tenants", label: "Tenants" },
  { href: "/tiers", label: "Tiers" },
  { href: "/operations", label: "Operations" },
  { href: "/policy", label: "Policy" },
  { href: "/nfr", label: "Requirements" },
  { href: "/simulator", label: "Simulator" },
  { href: "/advisor", label: "Advisor" },
  { href: "/dashboards", label: "Dashboards" },
  { href: "/billing", label: "Billing" },
  { href: "/audit", label: "Audit" },
  { href: "/settings", label: "Settings" },
] as const;

/** The app frame: navigation on the left, the signed-in user and role on top. */
export function Shell({ principal, children }: { principal: Principal; children: ReactNode }) {
  return (
    <div className="flex min-h-screen">
      <aside className="w-52 shrink-0 border-r border-slate-200 bg-white">
        <div className="px-4 py-4 text-lg font-semibold tracking-tight text-indigo-700">Sluice</div>
        <nav aria-label="Main" className="flex flex-col gap-0.5 px-2">
          {NAV_ITEMS.map((item) => (
            <NavLink key={item.href} href={item.href}>
              {item.label}
            </NavLink>
          ))}
        </nav>
      </aside>
      <div className="flex min-w-0 flex-1 flex-col">
        <header className="flex items-center justify-end gap-3 border-b border-slate-200 bg-white px-6 py-2.5 text-sm">
          <span data-testid="current-user">{principal.email}</span>
          <span className="badge" data-testid="current-role">
            {principal.role}
          </span>
          <SignOutButton />
        </header>
        <main className="mx-auto w-full max-w-[1200px] flex-1 px-6 py-6">{children}</main>
      </div>
    </div>
  );
}

import type { ReactNode } from "react";
import type { Principal } from "@/lib/auth/require-role";
import { AppNav } from "./app-nav";
import { SignOutButton } from "./sign-out-button";

/**
 * The app frame: a skip link, the navigation (`pages`: those the role may open, lib/auth/pages.ts; a menu button
 * below 768 px), search, the signed-in user and role on top.
 */
export function Shell({ principal, pages, children }: { principal: Principal; pages: { href: string; label: string }[]; children: ReactNode }) {
  return (
    <div className="flex min-h-screen flex-col md:flex-row">
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <AppNav items={pages} />
      <div className="flex min-w-0 flex-1 flex-col">
        <header className="flex flex-wrap items-center justify-end gap-x-3 gap-y-2 border-b border-slate-200 bg-white px-4 py-2.5 text-sm md:px-6">
          <form action="/search" role="search" className="mr-auto w-full sm:w-64">
            <label htmlFor="site-search" className="sr-only">
              Search tenants and API keys
            </label>
            <input id="site-search" name="q" type="search" className="input" placeholder="Search tenants, keys (sk_…)" autoComplete="off" />
          </form>
          <span data-testid="current-user" className="min-w-0 truncate">
            {principal.email}
          </span>
          <span className="badge" data-testid="current-role">
            {principal.role}
          </span>
          <SignOutButton />
        </header>
        <main id="main" tabIndex={-1} className="mx-auto w-full max-w-[1200px] min-w-0 flex-1 px-4 py-6 focus:outline-none md:px-6">
          {children}
        </main>
      </div>
    </div>
  );
}

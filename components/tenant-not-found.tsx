import Link from "next/link";

/** A slug with no tenant (a typo, a deleted tenant): said as such, with the ways back. */
export function TenantNotFound() {
  return (
    <div className="card max-w-xl" data-testid="tenant-not-found">
      <h1 className="text-lg font-semibold">Tenant not found</h1>
      <p className="mt-1 text-sm text-slate-700">No tenant has this slug. It may have been deleted, or the address is mistyped.</p>
      <div className="mt-3 flex flex-wrap items-center gap-4 text-sm">
        <Link href="/tenants" className="text-indigo-700 hover:underline">
          All tenants
        </Link>
        <form action="/search" role="search">
          <label htmlFor="nf-search" className="sr-only">
            Search tenants
          </label>
          <input id="nf-search" name="q" type="search" className="input w-48" placeholder="Search tenants" />
        </form>
      </div>
    </div>
  );
}

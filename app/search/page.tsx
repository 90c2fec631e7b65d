import Link from "next/link";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { search, searchQuerySchema } from "@/lib/services/observe/search";

export const metadata = { title: "Search · Sluice" };

export default async function SearchPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const raw = typeof sp.q === "string" ? sp.q : "";
  const { principal, allowed } = await pageAccess("policy.read", `/search?q=${encodeURIComponent(raw)}`);
  if (!allowed) return <Forbidden role={principal.role} what="read tenants" />;
  const parsed = searchQuerySchema.safeParse(raw);
  if (!parsed.success) {
    return (
      <>
        <PageHeader title="Search" description="Tenants by slug or name, API keys by prefix (sk_test_acme…) or name." />
        <p role="alert" className="text-sm text-red-700">
          Search: {parsed.error.issues[0].message}.
        </p>
      </>
    );
  }
  const results = await search(db(), parsed.data);
  return (
    <>
      <PageHeader title={`Search: ${results.query}`} description="Tenants by slug or name, API keys by prefix (sk_test_acme…) or name; at most 20 of each." />
      {results.exact !== undefined && (
        <Section title="Exact key">
          <p className="card text-sm" data-testid="search-exact">
            {results.exact ? (
              <>
                This is API key{" "}
                <Link href={`/tenants/${results.exact.tenant}/keys/${results.exact.id}`} className="font-semibold text-indigo-700 hover:underline" data-testid="search-exact-key">
                  {results.exact.name}
                </Link>{" "}
                (<span className="font-mono text-xs">{results.exact.prefix}…</span>) of tenant{" "}
                <Link href={`/tenants/${results.exact.tenant}`} className="text-indigo-700 hover:underline">
                  {results.exact.tenant}
                </Link>
                , {results.exact.revoked ? "revoked: the decision API refuses it (401)." : "active."}
              </>
            ) : (
              "No API key is exactly this value (checked by its SHA-256): keys below only share its prefix or name."
            )}
          </p>
        </Section>
      )}
      <Section title={`Tenants (${results.tenants.length})`}>
        {results.tenants.length === 0 ? (
          <EmptyState title="No tenant matches." />
        ) : (
          <ul className="card divide-y divide-slate-100 p-0" data-testid="search-tenants">
            {results.tenants.map((t) => (
              <li key={t.slug} className="flex flex-wrap items-center gap-x-3 gap-y-1 px-4 py-2 text-sm">
                <Link href={`/tenants/${t.slug}`} className="font-medium text-indigo-700 hover:underline">
                  {t.name}
                </Link>
                <span className="font-mono text-xs text-slate-500">{t.slug}</span>
                <span className="badge">{t.tier}</span>
                {t.status !== "active" && <span className="badge bg-amber-100 text-amber-800">{t.status}</span>}
                <Link href={`/dashboards/tenants/${t.slug}`} className="ml-auto text-xs text-indigo-700 hover:underline">
                  Usage dashboard
                </Link>
              </li>
            ))}
          </ul>
        )}
      </Section>
      <Section title={`API keys (${results.keys.length})`}>
        {results.keys.length === 0 ? (
          <EmptyState title="No key matches.">A key is found by its prefix (the first 12 characters, such as sk_test_acme, or a part of them) or by its name.</EmptyState>
        ) : (
          <ul className="card divide-y divide-slate-100 p-0" data-testid="search-keys">
            {results.keys.map((k) => (
              <li key={`${k.tenant}/${k.name}`} className="flex flex-wrap items-center gap-x-3 gap-y-1 px-4 py-2 text-sm">
                <span className="font-mono text-xs">{k.prefix}…</span>
                <Link href={`/tenants/${k.tenant}/keys/${k.id}`} className="text-indigo-700 hover:underline">
                  {k.name}
                </Link>
                {k.revoked && <span className="badge">revoked</span>}
                <Link href={`/tenants/${k.tenant}`} className="ml-auto text-indigo-700 hover:underline">
                  {k.tenant}
                </Link>
              </li>
            ))}
          </ul>
        )}
      </Section>
    </>
  );
}

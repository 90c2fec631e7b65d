import Link from "next/link";
import { notFound } from "next/navigation";
import { KeyActions } from "@/components/key-actions";
import { Forbidden, formatTime, PageHeader, Section, Stat } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { DENIAL_REASON_LABELS, DENIAL_REASONS, UNRECORDED_REASON, UNRECORDED_REASON_LABEL } from "@/lib/policy/denial-reasons";
import { apiKeyPage, KEY_RANGES, keyRangeSchema, type ApiKeyPage } from "@/lib/services/access/api-key-page";
import { revokeKeyAction, rotateKeyAction } from "../../actions";

export const metadata = { title: "API key · Sluice" };

/** The time of this request (outside render, so the page stays pure). */
async function requestTime(): Promise<number> {
  return Date.now();
}

function inWords(ms: number): string {
  const minutes = Math.round(Math.abs(ms) / 60_000);
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 48 * 60) return `${Math.round(minutes / 60)} h`;
  return `${Math.round(minutes / 1440)} days`;
}

function Expiry({ page, nowMs }: { page: ApiKeyPage; nowMs: number }) {
  if (page.revokedAt) return <>revoked {formatTime(page.revokedAt)}</>;
  if (!page.expiresAt) return <>never (works until revoked)</>;
  const left = page.expiresAt.getTime() - nowMs;
  return (
    <>
      {formatTime(page.expiresAt)} ({left > 0 ? `in ${inWords(left)}; the worker revokes it then` : `passed ${inWords(left)} ago; the worker revokes it within seconds`})
    </>
  );
}

export default async function KeyPage({ params, searchParams }: { params: Promise<{ slug: string; id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { slug, id } = await params;
  const rawRange = (await searchParams).range;
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/tenants"], `/tenants/${slug}/keys/${id}`);
  if (!allowed) return <Forbidden role={principal.role} what="read tenants" />;
  const range = keyRangeSchema.safeParse(rawRange ?? "24h");
  const nowMs = await requestTime();
  const page = await apiKeyPage(db(), { tenant: slug, keyId: id, range: range.success ? range.data : "24h", nowMs });
  if (!page) notFound();
  const canKeys = can(principal.role, "keys.manage");
  const canUsage = can(principal.role, "usage.read");
  const { usage } = page;
  const total = usage.allowed + usage.denied;
  const reasons = [...DENIAL_REASONS.map((r) => ({ reason: r as string, label: DENIAL_REASON_LABELS[r], n: usage.deniedByReason[r] })), { reason: UNRECORDED_REASON, label: UNRECORDED_REASON_LABEL, n: usage.deniedByReason[UNRECORDED_REASON] }].filter((r) => r.n > 0);
  return (
    <>
      <p className="mb-2 text-sm">
        <Link href={`/tenants/${page.tenant.slug}`} className="text-indigo-700 hover:underline">
          ← {page.tenant.name}
        </Link>
      </p>
      <PageHeader title={`API key ${page.name}`} description={<span className="font-mono">{page.prefix}…</span>} />
      <Section title="Key">
        <dl className="card grid grid-cols-1 gap-x-6 gap-y-2 text-sm sm:grid-cols-[10rem_1fr]" data-testid="key-facts">
          <dt className="text-slate-500">Status</dt>
          <dd>
            <span className={`badge ${page.status === "active" ? "bg-green-100 text-green-800" : page.status === "expiring" ? "bg-amber-100 text-amber-800" : ""}`} data-testid="key-status">
              {page.status}
            </span>
          </dd>
          <dt className="text-slate-500">Tenant</dt>
          <dd>
            <Link href={`/tenants/${page.tenant.slug}`} className="text-indigo-700 hover:underline">
              {page.tenant.slug}
            </Link>
          </dd>
          <dt className="text-slate-500">Created</dt>
          <dd>{formatTime(page.createdAt)}</dd>
          <dt className="text-slate-500">Expires</dt>
          <dd data-testid="key-expiry">
            <Expiry page={page} nowMs={nowMs} />
          </dd>
          <dt className="text-slate-500">Last used</dt>
          <dd data-testid="key-last-used">
            {page.lastUsed
              ? `${page.lastUsed.granularity === "minute" ? "in the minute of" : page.lastUsed.granularity === "hour" ? "in the hour of" : "on the day of"} ${formatTime(new Date(page.lastUsed.atMs))} (${inWords(nowMs - page.lastUsed.atMs)} ago)`
              : "never: no decision with this key is recorded"}
          </dd>
          {page.rotatedFrom && (
            <>
              <dt className="text-slate-500">Replaces</dt>
              <dd>
                <Link href={`/tenants/${page.tenant.slug}/keys/${page.rotatedFrom.id}`} className="text-indigo-700 hover:underline">
                  {page.rotatedFrom.name}
                </Link>
              </dd>
            </>
          )}
          {page.rotatedTo.length > 0 && (
            <>
              <dt className="text-slate-500">Replaced by</dt>
              <dd data-testid="key-replaced-by">
                {page.rotatedTo.map((k, i) => (
                  <span key={k.id}>
                    {i > 0 && ", "}
                    <Link href={`/tenants/${page.tenant.slug}/keys/${k.id}`} className="text-indigo-700 hover:underline">
                      {k.name}
                    </Link>
                    {k.revoked && " (revoked)"}
                  </span>
                ))}
              </dd>
            </>
          )}
        </dl>
      </Section>
      {canUsage ? (
        <Section
          title="Usage"
          description={`Decisions with this key from ${formatTime(new Date(usage.fromMs))} to ${formatTime(new Date(usage.toMs))} (complete minutes, from the usage rollups).`}
          actions={
            <nav className="flex gap-1 text-sm" aria-label="Range">
              {(Object.keys(KEY_RANGES) as (keyof typeof KEY_RANGES)[]).map((r) => (
                <Link key={r} href={`?range=${r}`} className={`rounded px-2 py-1 ${r === usage.range ? "bg-indigo-600 text-white" : "text-indigo-700 hover:bg-indigo-50"}`} aria-current={r === usage.range ? "page" : undefined}>
                  {r}
                </Link>
              ))}
            </nav>
          }
        >
          {!range.success && (
            <p role="alert" className="mb-2 text-sm text-red-700">
              range: {range.error.issues[0]?.message}; showing 24h.
            </p>
          )}
          <div className="grid grid-cols-2 gap-3 sm:grid-cols-4" data-testid="key-usage">
            <Stat label="Decisions" value={total.toLocaleString("en-US")} />
            <Stat label="Allowed" value={usage.allowed.toLocaleString("en-US")} />
            <Stat label="Denied" value={usage.denied.toLocaleString("en-US")} />
            <Stat label="Denied share" value={total > 0 ? `${((usage.denied / total) * 100).toFixed(1)}%` : "—"} />
          </div>
          <div className="mt-3 overflow-x-auto rounded-lg border border-slate-200 bg-white">
            <table className="table" data-testid="key-denials">
              <thead>
                <tr>
                  <th>Denied because</th>
                  <th className="text-right">Decisions</th>
                </tr>
              </thead>
              <tbody>
                {reasons.length === 0 ? (
                  <tr>
                    <td colSpan={2} className="text-slate-500">
                      No denial in this range.
                    </td>
                  </tr>
                ) : (
                  reasons.map((r) => (
                    <tr key={r.reason} data-testid={`key-denial-${r.reason}`}>
                      <td>{r.label}</td>
                      <td className="text-right tabular-nums">{r.n.toLocaleString("en-US")}</td>
                    </tr>
                  ))
                )}
              </tbody>
            </table>
          </div>
        </Section>
      ) : (
        <Section title="Usage">
          <p className="card text-sm text-slate-600">The {principal.role} role may not read usage.</p>
        </Section>
      )}
      {canKeys && page.status !== "revoked" && (
        <Section title="Rotate or revoke" description="Rotating issues a new key, shown once. The old key keeps working for the overlap, so clients can move to the new one, and is then revoked. Both are in the audit log.">
          <KeyActions slug={page.tenant.slug} keyId={page.id} name={page.name} prefix={page.prefix} rotate={rotateKeyAction} revoke={revokeKeyAction} />
        </Section>
      )}
    </>
  );
}

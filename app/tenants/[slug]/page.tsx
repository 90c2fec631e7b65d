import Link from "next/link";
import { notFound } from "next/navigation";
import { KeysPanel } from "@/components/keys-panel";
import { OverridesEditor } from "@/components/overrides-editor";
import { TenantTierStatus } from "@/components/tenant-controls";
import { Forbidden, formatTime, PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { getTenantDetail, listTierNames } from "@/lib/db/ui-tenants";
import { formatDurationMs } from "@/lib/policy/duration";
import { createKeyAction, revokeKeyAction, saveOverrideAction, setTenantStatusAction, setTenantTierAction } from "./actions";

export default async function TenantPage({ params }: { params: Promise<{ slug: string }> }) {
  const { slug } = await params;
  const { principal, allowed } = await pageAccess("policy.read", `/tenants/${slug}`);
  if (!allowed) return <Forbidden role={principal.role} what="read tenants" />;
  const [tenant, tiers, operations] = await Promise.all([
    getTenantDetail(db(), slug),
    listTierNames(db()),
    db().operation.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }], select: { name: true } }),
  ]);
  if (!tenant) notFound();
  const canEdit = can(principal.role, "policy.edit");
  const canKeys = can(principal.role, "keys.manage");
  return (
    <>
      <p className="mb-2 text-sm">
        <Link href="/tenants" className="text-indigo-700 hover:underline">
          ← Tenants
        </Link>
      </p>
      <PageHeader
        title={tenant.name}
        description={<span className="font-mono">{tenant.slug}</span>}
        actions={
          <Link className="btn" href={`/dashboards/tenants/${tenant.slug}`}>
            Usage dashboard
          </Link>
        }
      />
      <Section title="Tier and status" description="Changes go to the draft; publish them on the Policy page.">
        <TenantTierStatus slug={tenant.slug} tier={tenant.tier} status={tenant.status} tiers={tiers} canEdit={canEdit} setTier={setTenantTierAction} setStatus={setTenantStatusAction} />
      </Section>
      <Section title="API keys" description="Stored as SHA-256 hashes and listed by prefix. A new key is shown once. Keys and revocations take effect on the decision path immediately.">
        <KeysPanel
          slug={tenant.slug}
          canManage={canKeys}
          create={createKeyAction}
          revoke={revokeKeyAction}
          keys={tenant.keys.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null }))}
        />
      </Section>
      <Section title="Overrides" description="Replace the tier's limit (by scope) or quota (by period) for one operation of this tenant, optionally until a date.">
        <OverridesEditor
          slug={tenant.slug}
          canEdit={canEdit}
          save={saveOverrideAction}
          nowIso={new Date().toISOString()}
          operations={operations.map((o) => o.name)}
          overrides={tenant.overrides.map((o) => ({
            id: o.id,
            operation: o.operation,
            scope: o.scope,
            period: o.period,
            limit: o.limit,
            algorithm: o.algorithm,
            window: o.windowMs === null ? null : formatDurationMs(o.windowMs),
            burst: o.burst,
            overage: o.overage,
            expiresAt: o.expiresAt?.toISOString() ?? null,
          }))}
        />
      </Section>
      <Section title="Usage" description="Requests this month by outcome, from the usage rollups.">
        <div className="card text-sm text-slate-600" data-testid="usage-slot">
          Usage for this tenant appears on <Link className="text-indigo-700 hover:underline" href={`/dashboards?tenant=${tenant.slug}`}>Dashboards</Link> and in{" "}
          <Link className="text-indigo-700 hover:underline" href="/billing">Billing</Link>. Created {formatTime(tenant.createdAt)}, last changed {formatTime(tenant.updatedAt)}.
        </div>
      </Section>
    </>
  );
}

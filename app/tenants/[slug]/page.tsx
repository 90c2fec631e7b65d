import Link from "next/link";
import { notFound } from "next/navigation";
import { KeysPanel } from "@/components/keys-panel";
import { OverridesEditor } from "@/components/overrides-editor";
import { NotificationsPanel, TenantBilling } from "@/components/tenant-billing";
import { TenantTierStatus } from "@/components/tenant-controls";
import { TenantUsage } from "@/components/tenant-usage";
import { Forbidden, formatTime, PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { getTenantDetail, listTierNames } from "@/lib/db/ui-tenants";
import { formatDurationMs } from "@/lib/policy/duration";
import { DEFAULT_THRESHOLDS } from "@/lib/policy/tenant-usage-answer";
import { readLivePolicy } from "@/lib/services/policy/draft-view";
import { listTenantNotifications } from "@/lib/services/billing/quota-notifications";
import { tenantUsage } from "@/lib/services/observe/tenant-usage";
import {
  createKeyAction,
  resendNotificationAction,
  revokeKeyAction,
  saveOverrideAction,
  setTenantBillingAction,
  setTenantStatusAction,
  setTenantThresholdsAction,
  setTenantTierAction,
} from "./actions";

/** The time of this request (outside render, so the page stays pure). */
async function requestTime(): Promise<number> {
  return Date.now();
}

export default async function TenantPage({ params }: { params: Promise<{ slug: string }> }) {
  const { slug } = await params;
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/tenants"], `/tenants/${slug}`);
  if (!allowed) return <Forbidden role={principal.role} what="read tenants" />;
  const [tenant, tiers, operations] = await Promise.all([
    getTenantDetail(db(), slug),
    listTierNames(db()),
    db().operation.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }], select: { name: true } }),
  ]);
  if (!tenant) notFound();
  const canEdit = can(principal.role, "policy.edit");
  const canKeys = can(principal.role, "keys.manage");
  const nowMs = await requestTime();
  const [usage, live, notifications, tierRow] = await Promise.all([
    can(principal.role, "usage.read") ? tenantUsage(db(), tenant.slug, nowMs) : Promise.resolve(null),
    readLivePolicy(db()),
    listTenantNotifications(db(), tenant.slug),
    db().tier.findUnique({ where: { name: tenant.tier }, select: { thresholds: true } }),
  ]);
  const tierThresholds = Array.isArray(tierRow?.thresholds) ? (tierRow.thresholds as number[]) : [...DEFAULT_THRESHOLDS];
  const liveTenant = live?.tenants[tenant.slug] ?? null;
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
      <Section
        title="Tier and status"
        description={
          live && (!liveTenant || liveTenant.tier !== tenant.tier || liveTenant.status !== tenant.status)
            ? `Draft: ${tenant.tier}, ${tenant.status}. Live v${live.version} enforces ${liveTenant ? `${liveTenant.tier}, ${liveTenant.status}` : "nothing for this tenant (not published yet)"} until the draft is published.`
            : "Changes go to the draft; publish them on the Policy page."
        }
      >
        <TenantTierStatus slug={tenant.slug} tier={tenant.tier} status={tenant.status} tiers={tiers} canEdit={canEdit} setTier={setTenantTierAction} setStatus={setTenantStatusAction} />
      </Section>
      <Section
        title="Billing period and notifications"
        description="Month quotas follow the customer's bill: from the anchor's day of month at local midnight (the 29th–31st fall on the last day of shorter months). Thresholds send one signed webhook per quota and period."
      >
        <TenantBilling
          slug={tenant.slug}
          billing={tenant.billing}
          thresholds={tenant.thresholds}
          tierThresholds={tierThresholds}
          nowMs={nowMs}
          canEdit={canEdit}
          setBilling={setTenantBillingAction}
          setThresholds={setTenantThresholdsAction}
        />
        <h3 className="mt-4 mb-2 text-sm font-semibold">Quota notifications</h3>
        <NotificationsPanel slug={tenant.slug} rows={notifications} canResend={canEdit} resend={resendNotificationAction} />
      </Section>
      <Section title="API keys" description="Stored as SHA-256 hashes and listed by prefix. A new key is shown once. Keys and revocations take effect on the decision path immediately. A key's page shows its usage, when it was last used, and rotates it.">
        <KeysPanel
          slug={tenant.slug}
          canManage={canKeys}
          create={createKeyAction}
          revoke={revokeKeyAction}
          keys={tenant.keys.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null, expiresAt: k.expiresAt?.toISOString() ?? null }))}
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
      <Section title="Usage" description={`Traffic, 429s by the limit that denied them and quota burn, from the usage rollups (complete minutes). Created ${formatTime(tenant.createdAt)}, last changed ${formatTime(tenant.updatedAt)}.`}>
        {usage ? (
          <TenantUsage slug={tenant.slug} {...usage} canDashboards={can(principal.role, PAGE_ACTIONS["/dashboards"])} />
        ) : (
          <p className="card text-sm text-slate-600">The {principal.role} role may not read usage.</p>
        )}
      </Section>
    </>
  );
}

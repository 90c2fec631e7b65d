/**
 * The customer portal: `/portal/<tenant>?exp=…&sig=…`, a signed, expiring link made by
 * `sluice portal-link` (lib/services/billing/portal-link.ts). No control-plane login: the link is the
 * credential, checked here on every request, and it names the only tenant shown.
 */
import type { Metadata } from "next";
import { appRedis } from "@/app/_lib/redis";
import { PortalRefused, PortalUsage } from "@/components/portal-usage";
import { db } from "@/lib/db/client";
import { ServiceError } from "@/lib/services/errors";
import { portalRefusal, verifyPortalLink } from "@/lib/services/billing/portal-link";
import { readTenantUsage } from "@/lib/services/observe/tenant-usage-view";

export const metadata: Metadata = { title: "Usage", robots: { index: false, follow: false }, referrer: "no-referrer" };
export const dynamic = "force-dynamic";

/** The time of this request (outside render, so the page stays pure). */
async function requestTime(): Promise<number> {
  return Date.now();
}

export default async function PortalPage({ params, searchParams }: { params: Promise<{ tenant: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const [{ tenant }, query] = await Promise.all([params, searchParams]);
  const nowMs = await requestTime();
  const check = verifyPortalLink({ tenant: decodeURIComponent(tenant), exp: query.exp, sig: query.sig }, nowMs);
  if (!check.ok) return <PortalRefused text={portalRefusal(check.reason)} />;
  const usage = await readTenantUsage({ db: db(), redis: appRedis() }, check.tenant, nowMs).catch((error: unknown) => {
    if (error instanceof ServiceError && error.code === "store_unavailable") return "unavailable" as const;
    throw error;
  });
  if (usage === "unavailable") return <PortalRefused text={portalRefusal("unavailable")} />;
  if (!usage) return <PortalRefused text={portalRefusal("unknown")} />;
  return <PortalUsage usage={usage} expiresAt={new Date(check.expiresAtMs).toISOString()} />;
}

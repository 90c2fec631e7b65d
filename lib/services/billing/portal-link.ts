/**
 * Customer portal links (`sluice portal-link --tenant acme --ttl 1h`): a URL of the page
 * `/portal/<tenant>` that shows that tenant's limits and quotas to a person without a control-plane
 * login. The link carries its expiry and an HMAC-SHA256 over `portal.v1|<tenant>|<exp>`, so a
 * changed tenant, a changed expiry or a forged signature is refused, and so is a link past its
 * expiry (docs/billing-periods.md, "The customer portal").
 *
 * The signature is lib/auth/portal-link.ts's (proxy.ts checks it too); its key is
 * SLUICE_PORTAL_SECRET, or one derived from the control plane's session secret (NEXTAUTH_SECRET):
 * the CLI that makes a link and the control plane that checks it must share it.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { portalSignature } from "../../auth/portal-link";
import { parseDurationMs } from "../../policy/duration";
import { ServiceError } from "../errors";

const MIN_TTL_MS = 60_000;
const MAX_TTL_MS = 30 * 86_400_000;

export const portalLinkInputSchema = z.strictObject({
  tenant: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "expected a tenant slug"),
  ttl: z.string().refine((v) => {
    const ms = parseDurationMs(v);
    return ms !== null && ms >= MIN_TTL_MS && ms <= MAX_TTL_MS;
  }, "expected a duration from 1m to 30d, like 1h"),
  baseUrl: z.url({ protocol: /^https?$/, message: "expected an http(s) URL" }),
});

export interface PortalLink {
  url: string;
  tenant: string;
  expiresAt: string;
}

/** A signed link for a tenant the draft or the live policy has; throws not_found otherwise. */
export async function createPortalLink(db: PrismaClient, input: z.input<typeof portalLinkInputSchema>, nowMs: number): Promise<PortalLink> {
  const parsed = portalLinkInputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ServiceError("invalid_request", `${String(issue.path[0])}: ${issue.message}`, { field: String(issue.path[0]) });
  }
  const { tenant, ttl, baseUrl } = parsed.data;
  if (!(await db.tenant.findUnique({ where: { slug: tenant }, select: { id: true } }))) {
    throw new ServiceError("not_found", `tenant: no tenant ${JSON.stringify(tenant)}`, { field: "tenant" });
  }
  const exp = Math.floor((nowMs + parseDurationMs(ttl)!) / 1000);
  const url = new URL(`/portal/${encodeURIComponent(tenant)}`, baseUrl);
  url.searchParams.set("exp", String(exp));
  url.searchParams.set("sig", portalSignature(tenant, exp));
  return { url: url.toString(), tenant, expiresAt: new Date(exp * 1000).toISOString() };
}

export { portalRefusal, verifyPortalLink, type PortalCheck } from "../../auth/portal-link";

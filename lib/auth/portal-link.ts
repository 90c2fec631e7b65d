/**
 * The signature of customer portal links (docs/billing-periods.md, "The customer portal"):
 * HMAC-SHA256 over `portal.v1|<tenant>|<exp>` with a key derived from SLUICE_PORTAL_SECRET, else
 * from the session secret. Checked by proxy.ts (a refused link never reaches the page, and gets a
 * 403) and again by the page itself (never rely on the proxy alone); made by lib/services/billing/portal-link.ts.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { currentEnv } from "../env";
import { authSecret } from "./secret";

const SLUG = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function key(): Buffer {
  const configured = currentEnv("SLUICE_PORTAL_SECRET");
  return createHash("sha256").update(`sluice-portal:${configured ?? authSecret()}`).digest();
}

export function portalSignature(tenant: string, expSeconds: number): string {
  return createHmac("sha256", key()).update(`portal.v1|${tenant}|${expSeconds}`).digest("base64url");
}

export type PortalCheck = { ok: true; tenant: string; expiresAtMs: number } | { ok: false; reason: "malformed" | "forged" | "expired" };

/** Checks a link's tenant, expiry and signature (constant-time), at `nowMs`. */
export function verifyPortalLink(input: { tenant: unknown; exp: unknown; sig: unknown }, nowMs: number): PortalCheck {
  const { tenant, exp, sig } = input;
  if (typeof tenant !== "string" || typeof exp !== "string" || typeof sig !== "string") return { ok: false, reason: "malformed" };
  if (!SLUG.test(tenant) || !/^\d{1,12}$/.test(exp) || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return { ok: false, reason: "malformed" };
  const expected = Buffer.from(portalSignature(tenant, Number(exp)));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: "forged" };
  const expiresAtMs = Number(exp) * 1000;
  if (nowMs >= expiresAtMs) return { ok: false, reason: "expired" };
  return { ok: true, tenant, expiresAtMs };
}

/** What a refused link is told: why, and nothing else (no tenant, no number). */
export function portalRefusal(reason: "malformed" | "forged" | "expired" | "unknown" | "unavailable"): string {
  return reason === "expired" ? "This link has expired." : reason === "unavailable" ? "Usage cannot be read right now." : "This link is not valid.";
}

import { afterEach, describe, expect, it } from "vitest";
import { portalSignature, verifyPortalLink } from "./portal-link";

const saved = process.env.SLUICE_PORTAL_SECRET;
afterEach(() => {
  if (saved === undefined) delete process.env.SLUICE_PORTAL_SECRET;
  else process.env.SLUICE_PORTAL_SECRET = saved;
});

describe("portal link signatures", () => {
  it("accept the signed tenant until its expiry; refuse another tenant, another expiry, another key, and garbage", () => {
    process.env.SLUICE_PORTAL_SECRET = "portal-secret-for-tests-0001";
    const exp = 1_900_000_000;
    const sig = portalSignature("acme", exp);
    const now = exp * 1000 - 1;
    expect(verifyPortalLink({ tenant: "acme", exp: String(exp), sig }, now)).toEqual({ ok: true, tenant: "acme", expiresAtMs: exp * 1000 });
    expect(verifyPortalLink({ tenant: "acme", exp: String(exp), sig }, exp * 1000)).toEqual({ ok: false, reason: "expired" });
    expect(verifyPortalLink({ tenant: "globex", exp: String(exp), sig }, now)).toEqual({ ok: false, reason: "forged" });
    expect(verifyPortalLink({ tenant: "acme", exp: String(exp + 1), sig }, now)).toEqual({ ok: false, reason: "forged" });
    expect(verifyPortalLink({ tenant: "acme", exp: "x", sig }, now)).toEqual({ ok: false, reason: "malformed" });
    expect(verifyPortalLink({ tenant: "../etc", exp: String(exp), sig }, now)).toEqual({ ok: false, reason: "malformed" });
    expect(verifyPortalLink({ tenant: "acme", exp: String(exp), sig: undefined }, now)).toEqual({ ok: false, reason: "malformed" });
    process.env.SLUICE_PORTAL_SECRET = "another-portal-secret-0002";
    expect(verifyPortalLink({ tenant: "acme", exp: String(exp), sig }, now)).toEqual({ ok: false, reason: "forged" });
  });
});

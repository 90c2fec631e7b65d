import { createHmac, timingSafeEqual } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signPayload, verifySignature } from "./quota-webhook";

describe("quota webhook signatures", () => {
  const secret = "whsec_test_0123456789abcdef";
  const body = '{"specversion":"1.0","id":"abc"}';

  it("verifies the exact bytes within 5 minutes, refuses a changed body, another secret and a replayed timestamp", () => {
    const ts = 1_800_000_000;
    const signature = signPayload(secret, ts, body);
    expect(verifySignature(secret, { signature, timestamp: String(ts) }, body, ts + 299)).toEqual({ ok: true });
    expect(verifySignature(secret, { signature, timestamp: String(ts) }, body + " ", ts)).toEqual({ ok: false, reason: "mismatch" });
    expect(verifySignature("whsec_other_0123456789", { signature, timestamp: String(ts) }, body, ts)).toEqual({ ok: false, reason: "mismatch" });
    expect(verifySignature(secret, { signature, timestamp: String(ts) }, body, ts + 301)).toEqual({ ok: false, reason: "stale" });
    expect(verifySignature(secret, { signature: undefined, timestamp: String(ts) }, body, ts)).toEqual({ ok: false, reason: "missing" });
  });

  it("matches the verification snippet of docs/billing-periods.md", () => {
    // The snippet, as documented (Node's crypto only).
    const verify = (sec: string, header: string, timestamp: string, raw: string) => {
      const expected = "v1=" + createHmac("sha256", sec).update(`${timestamp}.${raw}`).digest("hex");
      return header.length === expected.length && timingSafeEqual(Buffer.from(header), Buffer.from(expected));
    };
    expect(verify(secret, signPayload(secret, 42, body), "42", body)).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { denyShareThreshold } from "../jobs/alerts";
import { assertDeliverable, isPrivateAddress } from "./alert-webhook";

describe("webhook destinations", () => {
  it("treats private, loopback, link-local and unique-local addresses as private", () => {
    for (const a of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "100.64.0.1", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1"]) expect(isPrivateAddress(a), a).toBe(true);
    for (const a of ["8.8.8.8", "203.0.113.7", "2001:db8::1"]) expect(isPrivateAddress(a), a).toBe(false);
  });
  it("refuses plain http, credentials and private hosts unless explicitly allowed", async () => {
    await expect(assertDeliverable("http://example.com/x", false)).rejects.toThrow("https");
    await expect(assertDeliverable("https://u:p@example.com/x", false)).rejects.toThrow("credentials");
    await expect(assertDeliverable("https://169.254.169.254/latest", false)).rejects.toThrow("private");
    await expect(assertDeliverable("http://127.0.0.1:9/x", true)).resolves.toBeInstanceOf(URL);
  });
});

describe("429-share alert threshold", () => {
  it("is at least 5 %, twice the baseline, and 10 points above it", () => {
    expect(denyShareThreshold(0)).toBe(0.1);
    expect(denyShareThreshold(0.3)).toBe(0.6);
    expect(denyShareThreshold(0.05)).toBeCloseTo(0.15);
  });
});

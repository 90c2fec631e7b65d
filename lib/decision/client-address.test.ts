import { describe, expect, it } from "vitest";
import {
  canonicalClientAddress,
  clientAddressFromHeaders,
  clientAddressOrUnknown,
  DEFAULT_CLIENT_ADDRESS_RULES,
  parseTrustedProxies,
  UNKNOWN_CLIENT_ADDRESS,
  type ClientAddressRules,
} from "./client-address";

function from(headers: Record<string, string>, rules: Partial<ClientAddressRules> = {}): string {
  return clientAddressFromHeaders((name) => headers[name], { ...DEFAULT_CLIENT_ADDRESS_RULES, ...rules });
}

describe("client addresses: every spelling of one address is one subject", () => {
  it("canonicalises /v1/check's ip and refuses what is not exactly an address", () => {
    for (const s of ["198.51.100.7", "::ffff:198.51.100.7", "::ffff:c633:6407", "0:0:0:0:0:ffff:c633:6407"]) expect(canonicalClientAddress(s), s).toBe("198.51.100.7");
    for (const s of ["2001:db8::1", "2001:DB8:0:0:0:0:0:1", "2001:0db8::0001"]) expect(canonicalClientAddress(s), s).toBe("2001:db8::1");
    for (const s of ["x", "", "203.0.113.7:80", "[2001:db8::1]", "fe80::1%eth0", "010.0.0.1"]) expect(canonicalClientAddress(s), s).toBeNull();
  });

  it("gateway and gRPC addresses: ports and brackets are dropped, garbage is the shared unknown subject", () => {
    expect(clientAddressOrUnknown("203.0.113.7:4711")).toBe("203.0.113.7");
    expect(clientAddressOrUnknown("[2001:DB8::1]:443")).toBe("2001:db8::1");
    expect(clientAddressOrUnknown("[::ffff:c633:6407]")).toBe("198.51.100.7");
    expect(clientAddressOrUnknown(" 2001:db8::1 ")).toBe("2001:db8::1");
    for (const s of [undefined, "", "x", "unknown", "203.0.113.7:x", "[2001:db8::1", "[2001:db8::1]x", "1.2.3.4:5:6", "fe80::1%eth0"]) {
      expect(clientAddressOrUnknown(s), String(s)).toBe(UNKNOWN_CLIENT_ADDRESS);
    }
  });
});

describe("forwarding headers: which one wins and how many hops are trusted", () => {
  it("by default X-Real-IP wins when present: a constant one with a changing X-Forwarded-For is one counter", () => {
    // Issue #17: a constant X-Real-IP with a changing X-Forwarded-For got a fresh counter each time.
    const seen = ["10.0.0.1", "10.0.0.2", "6.6.6.6, 10.0.0.3", "x"].map((xff) => from({ "x-forwarded-for": xff, "x-real-ip": "198.51.100.9" }));
    expect(new Set(seen)).toEqual(new Set(["198.51.100.9"]));
    expect(from({ "x-real-ip": "::ffff:198.51.100.9" })).toBe("198.51.100.9");
    expect(from({ "x-real-ip": "x", "x-forwarded-for": "203.0.113.7" })).toBe(UNKNOWN_CLIENT_ADDRESS);
  });

  it("by default, with trusted hops or proxies configured, reads X-Forwarded-For (X-Real-IP is then the last proxy)", () => {
    const headers = { "x-forwarded-for": "203.0.113.7, 10.0.0.2", "x-real-ip": "10.0.0.2" };
    expect(from(headers, { trustedHops: 1 })).toBe("203.0.113.7");
    expect(from(headers, { trustedProxies: parseTrustedProxies("10.0.0.0/8") })).toBe("203.0.113.7");
  });

  it("by default, without X-Real-IP, reads X-Forwarded-For's rightmost entry (what the gateway appended)", () => {
    expect(from({ "x-forwarded-for": "6.6.6.6, 203.0.113.7" })).toBe(from({ "x-forwarded-for": "7.7.7.7, 203.0.113.7" }));
    expect(from({ "x-forwarded-for": "203.0.113.7" })).toBe("203.0.113.7");
    expect(from({ "x-forwarded-for": "::ffff:203.0.113.7" })).toBe("203.0.113.7");
  });

  it("a missing, empty or unparseable address is the shared unknown subject, never no subject", () => {
    expect(from({})).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-real-ip": "203.0.113.7" }, { header: "x-forwarded-for" })).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-real-ip": " " })).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-forwarded-for": "" })).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-forwarded-for": "x" })).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-forwarded-for": "203.0.113.7, x" })).toBe(UNKNOWN_CLIENT_ADDRESS);
  });

  it("X-Forwarded-For, when chosen alone, ignores X-Real-IP whatever it says", () => {
    const rules = { header: "x-forwarded-for" as const };
    expect(from({ "x-forwarded-for": "1.1.1.1, 203.0.113.7", "x-real-ip": "198.51.100.9" }, rules)).toBe("203.0.113.7");
  });

  it("X-Real-IP, when chosen alone, is one address and X-Forwarded-For is ignored", () => {
    const rules = { header: "x-real-ip" as const };
    expect(from({ "x-real-ip": "::ffff:c633:6407", "x-forwarded-for": "1.1.1.1" }, rules)).toBe("198.51.100.7");
    expect(from({ "x-forwarded-for": "1.1.1.1" }, rules)).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-real-ip": "1.1.1.1, 2.2.2.2" }, rules)).toBe(UNKNOWN_CLIENT_ADDRESS);
  });

  it("skips SLUICE_TRUSTED_PROXY_HOPS entries from the right, and the leftmost is the last resort", () => {
    const xff = { "x-forwarded-for": "9.9.9.9, 203.0.113.7, 10.0.0.2, 10.0.0.1" };
    expect(from(xff, { trustedHops: 0 })).toBe("10.0.0.1");
    expect(from(xff, { trustedHops: 2 })).toBe("203.0.113.7");
    expect(from(xff, { trustedHops: 3 })).toBe("9.9.9.9");
    expect(from(xff, { trustedHops: 9 })).toBe("9.9.9.9");
  });

  it("then skips entries inside SLUICE_TRUSTED_PROXIES (CIDRs), stopping at the first outside one", () => {
    const trustedProxies = parseTrustedProxies("10.0.0.0/8, fd00::/8");
    expect(from({ "x-forwarded-for": "9.9.9.9, 203.0.113.7, 10.0.0.2, [fd00::1]:80, 10.0.0.1" }, { trustedProxies })).toBe("203.0.113.7");
    expect(from({ "x-forwarded-for": "10.9.9.9, 10.0.0.1" }, { trustedProxies })).toBe("10.9.9.9");
    // An unparseable entry is not a trusted proxy: it is the client, and so unknown.
    expect(from({ "x-forwarded-for": "203.0.113.7, x, 10.0.0.1" }, { trustedProxies })).toBe(UNKNOWN_CLIENT_ADDRESS);
    expect(from({ "x-forwarded-for": "6.6.6.6, 203.0.113.7, 10.0.0.1" }, { trustedProxies, trustedHops: 1 })).toBe("203.0.113.7");
    expect(() => parseTrustedProxies("10.0.0.0/8, nope")).toThrow('got "nope"');
    expect(parseTrustedProxies(" ")).toEqual([]);
  });
});

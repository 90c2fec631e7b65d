import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalIpAddress,
  embeddedIPv4,
  formatIpAddress,
  ipInRange,
  maskIpAddress,
  notGlobalReason,
  parseIpAddress,
  parseIpRange,
  type IpAddress,
} from "./ip-address";

function ip(text: string): IpAddress {
  const parsed = parseIpAddress(text);
  if (!parsed) throw new Error(`unparseable in test: ${text}`);
  return parsed;
}

describe("every spelling of one address has one canonical text", () => {
  const spellings: [string, string[]][] = [
    ["198.51.100.7", ["198.51.100.7", "::ffff:198.51.100.7", "::ffff:c633:6407", "0:0:0:0:0:ffff:c633:6407", "::FFFF:C633:6407", "0000:0000:0000:0000:0000:ffff:c633:6407", "0:0::ffff:198.51.100.7"]],
    ["2001:db8::1", ["2001:db8::1", "2001:DB8::1", "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8:0:0:0:0:0:1", "2001:db8::0:1", "2001:db8:0::0:0:1"]],
    ["2001:db8::1:0:0:1", ["2001:db8:0:0:1:0:0:1"]],
    ["2001:0:0:1::1", ["2001:0:0:1:0:0:0:1"]],
    ["2001:db8:0:1:1:1:1:1", ["2001:db8:0:1:1:1:1:1", "2001:db8::1:1:1:1:1"]],
    ["::", ["::", "0:0:0:0:0:0:0:0", "0::0"]],
    ["::1", ["::1", "0:0:0:0:0:0:0:1"]],
    ["fe80::", ["fe80::", "FE80:0:0:0:0:0:0:0"]],
    ["::7f00:1", ["::127.0.0.1"]],
  ];
  for (const [canonical, list] of spellings) {
    it(`${list.join(", ")} → ${canonical}`, () => {
      for (const s of list) expect(canonicalIpAddress(s), s).toBe(canonical);
    });
  }

  it("refuses what has no single meaning or is not an address", () => {
    const bad = [
      "", "x", "unknown", "010.1.1.1", "1.2.3.04", "1.2.3", "1.2.3.4.5", "256.1.1.1", "0x7f.0.0.1", "127.1",
      "1::2::3", ":1::", "1:::2", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::8", "12345::", "::ffff:1.2.3", "::1.2.3.4:5",
      "fe80::1%eth0", "[::1]", "1.2.3.4:80", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4/8", "0000:0000:0000:0000:0000:ffff:255.255.255.2555",
    ];
    for (const s of bad) expect(parseIpAddress(s), JSON.stringify(s)).toBeNull();
  });

  it("formats like the WHATWG URL serializer (RFC 5952) for every IPv6 address that is not IPv4-mapped (property)", () => {
    const word = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(fc.array(word, { minLength: 8, maxLength: 8 }), (w) => {
        const text = w.map((n) => n.toString(16)).join(":");
        const parsed = ip(text);
        const mapped = w.slice(0, 5).every((n) => n === 0) && w[5] === 0xffff;
        const expected = mapped ? `${w[6]! >> 8}.${w[6]! & 0xff}.${w[7]! >> 8}.${w[7]! & 0xff}` : new URL(`http://[${text}]/`).hostname.slice(1, -1);
        expect(formatIpAddress(parsed)).toBe(expected);
        // Re-parsing the canonical text gives the same address.
        expect(canonicalIpAddress(formatIpAddress(parsed))).toBe(formatIpAddress(parsed));
        // Upper-case and zero-padded spellings canonicalise to the same text.
        const padded = w.map((n) => n.toString(16).toUpperCase().padStart(4, "0")).join(":");
        expect(canonicalIpAddress(padded)).toBe(expected);
      }),
      { numRuns: 2_000 },
    );
  });

  it("answers dotted text exactly as parse-then-format does (the no-allocation fast path agrees; property)", () => {
    const dotted = fc.oneof(
      fc.string({ unit: fc.constantFrom("0", "1", "2", "5", "9", "."), maxLength: 17 }),
      fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300), fc.nat(300)).map((p) => p.join(".")),
    );
    fc.assert(
      fc.property(dotted, (text) => {
        const parsed = parseIpAddress(text);
        expect(canonicalIpAddress(text)).toBe(parsed ? formatIpAddress(parsed) : null);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe("ranges and masks", () => {
  it("masks to a prefix and tests membership by number", () => {
    expect(formatIpAddress(maskIpAddress(ip("2001:db8:1:2:3:4:5:6"), 64))).toBe("2001:db8:1:2::");
    expect(formatIpAddress(maskIpAddress(ip("2001:db8:1:2:3:4:5:6"), 60))).toBe("2001:db8:1::");
    expect(formatIpAddress(maskIpAddress(ip("203.0.113.77"), 24))).toBe("203.0.113.0");
    const r = parseIpRange("10.0.0.0/8")!;
    expect(ipInRange(ip("10.255.1.2"), r)).toBe(true);
    expect(ipInRange(ip("::ffff:10.255.1.2"), r)).toBe(true);
    expect(ipInRange(ip("11.0.0.1"), r)).toBe(false);
    expect(ipInRange(ip("2001:db8::1"), r)).toBe(false);
    expect(ipInRange(ip("2001:db8::ffff"), parseIpRange("2001:db8::/32")!)).toBe(true);
    expect(parseIpRange("10.1.2.3")?.bits).toBe(32);
    for (const bad of ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/08", "x/8", "10.0.0.0/-1"]) expect(parseIpRange(bad), bad).toBeNull();
  });
});

describe("reachability: no spelling or IPv4 embedding of a non-global address passes", () => {
  const refused: [string, RegExp][] = [
    ["127.0.0.1", /loopback/],
    ["127.255.0.9", /loopback/],
    ["::1", /loopback/],
    ["::ffff:127.0.0.1", /loopback via IPv4-mapped/],
    ["::ffff:7f00:1", /loopback via IPv4-mapped/],
    ["::ffff:169.254.169.254", /link-local via IPv4-mapped/],
    ["0:0:0:0:0:ffff:a9fe:a9fe", /link-local via IPv4-mapped/],
    ["::127.0.0.1", /loopback via IPv4-compatible/],
    ["::a9fe:a9fe", /link-local via IPv4-compatible/],
    ["::ffff:0:7f00:1", /loopback via IPv4-translated/],
    ["64:ff9b::a9fe:a9fe", /link-local via NAT64/],
    ["64:ff9b::127.0.0.1", /loopback via NAT64/],
    ["64:ff9b::10.0.0.1", /private via NAT64/],
    ["64:ff9b:1::a00:1", /local-use NAT64/],
    ["2002:7f00:1::1", /loopback via 6to4/],
    ["2002:a9fe:a9fe::", /link-local via 6to4/],
    ["2001:0:7f00:1::", /loopback via Teredo server/],
    // Teredo client 127.0.0.1, stored inverted (0x80fffffe), behind the global server 8.8.8.8.
    ["2001:0:808:808::80ff:fffe", /loopback via Teredo client/],
    ["2001:0:808:808::1234:5678", /Teredo/],
    ["2001:4860::5efe:7f00:1", /loopback via ISATAP/],
    ["fe80::200:5efe:a9fe:a9fe", /link-local via ISATAP/],
    ["0.0.0.0", /this-network/],
    ["::", /unspecified/],
    ["10.1.2.3", /private/],
    ["172.16.0.1", /private/],
    ["172.31.255.255", /private/],
    ["192.168.1.1", /private/],
    ["100.64.0.1", /shared/],
    ["169.254.169.254", /link-local/],
    ["192.0.0.8", /IETF/],
    ["192.0.2.1", /documentation/],
    ["198.51.100.7", /documentation/],
    ["203.0.113.7", /documentation/],
    ["198.18.0.1", /benchmarking/],
    ["192.88.99.1", /6to4 relay/],
    ["224.0.0.1", /multicast/],
    ["240.0.0.1", /reserved/],
    ["255.255.255.255", /reserved/],
    ["fe80::1", /link-local/],
    ["febf::1", /link-local/],
    ["fec0::1", /site-local/],
    ["fc00::1", /unique-local/],
    ["fd12:3456::1", /unique-local/],
    ["ff02::1", /multicast/],
    ["100::1", /discard-only/],
    ["2001:db8::1", /documentation/],
    ["2001:2::1", /IETF/],
    ["3fff::1", /documentation/],
    ["5f00::1", /SRv6/],
    ["4000::1", /reserved/],
    ["::ffff:0:0:1", /IPv4-translated/],
  ];
  for (const [address, why] of refused) {
    it(`${address} is refused (${why.source})`, () => {
      expect(notGlobalReason(ip(address))).toMatch(why);
    });
  }

  it("global addresses pass, in IPv4, IPv6 and the embeddings that reach them", () => {
    for (const a of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"]) {
      expect(notGlobalReason(ip(a)), a).toBeNull();
    }
  });

  it("lists every embedding an address carries", () => {
    expect(embeddedIPv4(ip("2001:0:808:808::80ff:fffe")).map((e) => `${e.via} ${formatIpAddress(e.address)}`)).toEqual([
      "Teredo server 8.8.8.8",
      "Teredo client 127.0.0.1",
    ]);
    expect(embeddedIPv4(ip("8.8.8.8"))).toEqual([]);
  });
});

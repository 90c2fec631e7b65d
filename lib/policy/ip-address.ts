/**
 * IP addresses as numbers, not strings. One home for two contracts that went wrong by comparing
 * text (issue #17): the alert webhook's SSRF guard (is this address globally reachable, in every
 * spelling and every IPv4 embedding in IPv6?) and client addresses as counter subjects (every
 * spelling of one address is one counter, docs/decision-api.md "Client addresses").
 *
 * Pure and dependency-free (no node:net): the browser simulator canonicalises the addresses it
 * simulates with the same code the decision server runs, and lib/policy may import nothing else.
 *
 * Accepted text: IPv4 as four decimal numbers 0–255 without leading zeros (`010.0.0.1` is refused:
 * inet_aton reads it as octal 8.0.0.1, other parsers as decimal 10.0.0.1, so it has no single
 * meaning); IPv6 per RFC 4291 §2.2 (hex groups of 1–4 digits, one `::`, an optional dotted IPv4
 * tail), any case. Refused: zone ids (`fe80::1%eth0`), brackets, ports, whitespace, anything
 * longer than 45 characters. URL hosts are canonicalised by the WHATWG URL parser before they get
 * here (it turns `0x7f.1` and `2130706433` into `127.0.0.1`).
 */

export interface IpAddress {
  readonly family: 4 | 6;
  /** 4 bytes (IPv4) or 16 (IPv6), network order. */
  readonly bytes: readonly number[];
}

/** The longest text form: `0000:0000:0000:0000:0000:ffff:255.255.255.255`. */
const MAX_TEXT_CHARS = 45;

function parseIPv4Bytes(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

/** Hex groups of one side of `::` (possibly ending in a dotted IPv4) → 16-bit words, or null. */
function words(side: string, allowV4Tail: boolean): number[] | null {
  if (side === "") return [];
  const groups = side.split(":");
  const out: number[] = [];
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i]!;
    if (i === groups.length - 1 && allowV4Tail && g.includes(".")) {
      const v4 = parseIPv4Bytes(g);
      if (!v4) return null;
      out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      continue;
    }
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    out.push(parseInt(g, 16));
  }
  return out;
}

function parseIPv6Bytes(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  let all: number[];
  if (halves.length === 2) {
    const head = words(halves[0]!, false);
    const tail = words(halves[1]!, true);
    if (!head || !tail || head.length + tail.length > 7) return null;
    all = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const only = words(text, true);
    if (!only || only.length !== 8) return null;
    all = only;
  }
  const bytes: number[] = [];
  for (const w of all) bytes.push(w >> 8, w & 0xff);
  return bytes;
}

/** Parses one address in the text forms above; null for anything else. */
export function parseIpAddress(text: string): IpAddress | null {
  if (text.length === 0 || text.length > MAX_TEXT_CHARS) return null;
  if (text.includes(":")) {
    const bytes = parseIPv6Bytes(text);
    return bytes ? { family: 6, bytes } : null;
  }
  const bytes = parseIPv4Bytes(text);
  return bytes ? { family: 4, bytes } : null;
}

function startsWith(bytes: readonly number[], prefix: readonly number[]): boolean {
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** `::ffff:a.b.c.d` (IPv4-mapped, RFC 4291 §2.5.5.2) is the IPv4 address itself; anything else as is. */
export function unmapIPv4(ip: IpAddress): IpAddress {
  if (ip.family === 6 && startsWith(ip.bytes, MAPPED_PREFIX)) return { family: 4, bytes: ip.bytes.slice(12) };
  return ip;
}

/**
 * RFC 5952 text: IPv4 dotted; IPv6 lower-case, no leading zeros, the longest run of two or more
 * zero groups (the first of equal runs) as `::`. An IPv4-mapped address prints as its IPv4 address.
 */
export function formatIpAddress(input: IpAddress): string {
  const ip = unmapIPv4(input);
  if (ip.family === 4) return ip.bytes.join(".");
  const w: number[] = [];
  for (let i = 0; i < 16; i += 2) w.push((ip.bytes[i]! << 8) | ip.bytes[i + 1]!);
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (w[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && w[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) => w.slice(from, to).map((n) => n.toString(16)).join(":");
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

/**
 * Whether `text` is already an IPv4 address in canonical form (four decimal numbers 0–255 without
 * leading zeros): then it is its own canonical text. A scan of its characters, no allocation: the
 * decision path canonicalises a client address on every request, and this is what nearly all of
 * them look like.
 */
function isCanonicalIPv4(text: string): boolean {
  const n = text.length;
  if (n < 7 || n > 15) return false;
  let parts = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= n; i++) {
    const c = i === n ? 46 : text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || value > 255) return false;
      parts++;
      value = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits === 1 && value === 0) return false; // a leading zero
      value = value * 10 + (c - 48);
      if (++digits > 3) return false;
    } else {
      return false;
    }
  }
  return parts === 4;
}

/** The canonical text of an address (`::FFFF:C633:6407` → `198.51.100.7`), or null when unparseable. */
export function canonicalIpAddress(text: string): string | null {
  if (isCanonicalIPv4(text)) return text;
  const ip = parseIpAddress(text);
  return ip ? formatIpAddress(ip) : null;
}

/** The address with every bit after the first `bits` cleared. */
export function maskIpAddress(ip: IpAddress, bits: number): IpAddress {
  const bytes = ip.bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
  return { family: ip.family, bytes };
}

export interface IpRange {
  readonly address: IpAddress;
  readonly bits: number;
}

/** `10.0.0.0/8`, `2001:db8::/32`, or a single address (all bits). Null when unparseable. */
export function parseIpRange(text: string): IpRange | null {
  const slash = text.indexOf("/");
  const ip = parseIpAddress(slash === -1 ? text : text.slice(0, slash));
  if (!ip) return null;
  const max = ip.family === 4 ? 32 : 128;
  if (slash === -1) return { address: ip, bits: max };
  const bitsText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(bitsText) || Number(bitsText) > max) return null;
  const bits = Number(bitsText);
  return { address: maskIpAddress(ip, bits), bits };
}

/** Whether `ip` lies in `range` (same family; an IPv4-mapped address counts as its IPv4 address). */
export function ipInRange(input: IpAddress, range: IpRange): boolean {
  const ip = input.family === range.address.family ? input : unmapIPv4(input);
  if (ip.family !== range.address.family) return false;
  const masked = maskIpAddress(ip, range.bits);
  return masked.bytes.every((b, i) => b === range.address.bytes[i]);
}

// ---------------------------------------------------------------------------------------------
// Reachability (the webhook's SSRF guard)

function range(text: string): IpRange {
  const r = parseIpRange(text);
  if (!r) throw new Error(`bad built-in range ${text}`);
  return r;
}

/**
 * IPv4 ranges that are not globally reachable (IANA IPv4 Special-Purpose Address Registry), each
 * with the reason a refusal states. Everything else in IPv4 is global.
 */
const IPV4_NOT_GLOBAL: readonly [IpRange, string][] = [
  [range("0.0.0.0/8"), "this-network"],
  [range("10.0.0.0/8"), "private"],
  [range("100.64.0.0/10"), "shared (carrier-grade NAT)"],
  [range("127.0.0.0/8"), "loopback"],
  [range("169.254.0.0/16"), "link-local"],
  [range("172.16.0.0/12"), "private"],
  [range("192.0.0.0/24"), "IETF protocol assignments"],
  [range("192.0.2.0/24"), "documentation"],
  [range("192.88.99.0/24"), "6to4 relay anycast"],
  [range("192.168.0.0/16"), "private"],
  [range("198.18.0.0/15"), "benchmarking"],
  [range("198.51.100.0/24"), "documentation"],
  [range("203.0.113.0/24"), "documentation"],
  [range("224.0.0.0/4"), "multicast"],
  [range("240.0.0.0/4"), "reserved"],
];

/**
 * IPv6 ranges inside global unicast (2000::/3) that are not globally reachable (IANA IPv6
 * Special-Purpose Address Registry). Outside 2000::/3 nothing is global except the NAT64 prefix
 * 64:ff9b::/96, which is judged by the IPv4 address it embeds.
 */
const IPV6_NOT_GLOBAL: readonly [IpRange, string][] = [
  [range("2001::/32"), "Teredo"],
  [range("2001::/23"), "IETF protocol assignments"],
  [range("2001:db8::/32"), "documentation"],
  [range("3fff::/20"), "documentation"],
];

/** Names for the well-known ranges outside 2000::/3, so a refusal says what the address is. */
const IPV6_OUTSIDE_NAMES: readonly [IpRange, string][] = [
  [range("::/128"), "unspecified"],
  [range("::1/128"), "loopback"],
  [range("64:ff9b:1::/48"), "local-use NAT64"],
  [range("100::/64"), "discard-only"],
  [range("5f00::/16"), "SRv6 segment identifiers"],
  [range("fc00::/7"), "unique-local"],
  [range("fe80::/10"), "link-local"],
  [range("fec0::/10"), "site-local"],
  [range("ff00::/8"), "multicast"],
];

const GLOBAL_UNICAST = range("2000::/3");
const NAT64 = range("64:ff9b::/96");

function v4(bytes: readonly number[]): IpAddress {
  return { family: 4, bytes: [...bytes] };
}

/**
 * Every IPv4 address an IPv6 address carries, with the mechanism's name: IPv4-mapped
 * (::ffff:0:0/96), IPv4-compatible (::/96, deprecated), IPv4-translated (::ffff:0:0:0/96, SIIT),
 * NAT64 (64:ff9b::/96, RFC 6052), 6to4 (2002::/16, bits 16–47), Teredo (2001::/32: the server in
 * bits 32–63, the client in bits 96–127 inverted) and ISATAP (interface id 0:5efe or 200:5efe).
 */
export function embeddedIPv4(ip: IpAddress): { via: string; address: IpAddress }[] {
  if (ip.family !== 6) return [];
  const b = ip.bytes;
  const out: { via: string; address: IpAddress }[] = [];
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) out.push({ via: "IPv4-mapped", address: v4(b.slice(12)) });
  else if (zero(0, 12) && !zero(12, 14)) out.push({ via: "IPv4-compatible", address: v4(b.slice(12)) });
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) out.push({ via: "IPv4-translated", address: v4(b.slice(12)) });
  if (ipInRange(ip, NAT64)) out.push({ via: "NAT64", address: v4(b.slice(12)) });
  if (b[0] === 0x20 && b[1] === 0x02) out.push({ via: "6to4", address: v4(b.slice(2, 6)) });
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) {
    out.push({ via: "Teredo server", address: v4(b.slice(4, 8)) });
    out.push({ via: "Teredo client", address: v4(b.slice(12).map((x) => x ^ 0xff)) });
  }
  if ((b[8] === 0 || b[8] === 2) && b[9] === 0 && b[10] === 0x5e && b[11] === 0xfe) out.push({ via: "ISATAP", address: v4(b.slice(12)) });
  return out;
}

function ipv4NotGlobal(ip: IpAddress): string | null {
  for (const [r, why] of IPV4_NOT_GLOBAL) if (ipInRange(ip, r)) return why;
  return null;
}

/**
 * Why an address is not globally reachable (`loopback`, `link-local via IPv4-mapped`, …), or null
 * when it is. An IPv6 address is refused when any IPv4 address it embeds is not global, whatever
 * the mechanism, so no spelling of 127.0.0.1 or 169.254.169.254 passes.
 */
export function notGlobalReason(ip: IpAddress): string | null {
  if (ip.family === 4) return ipv4NotGlobal(ip);
  for (const e of embeddedIPv4(ip)) {
    const why = ipv4NotGlobal(e.address);
    if (why) return `${why} via ${e.via} (${formatIpAddress(e.address)})`;
  }
  // A mapped or NAT64 address of a global IPv4 address reaches that address.
  if (unmapIPv4(ip).family === 4 || ipInRange(ip, NAT64)) return null;
  if (!ipInRange(ip, GLOBAL_UNICAST)) {
    for (const [r, why] of IPV6_OUTSIDE_NAMES) if (ipInRange(ip, r)) return why;
    for (const e of embeddedIPv4(ip)) return `reserved (${e.via})`;
    return "reserved (outside 2000::/3)";
  }
  for (const [r, why] of IPV6_NOT_GLOBAL) if (ipInRange(ip, r)) return why;
  return null;
}

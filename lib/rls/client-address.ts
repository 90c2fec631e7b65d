/**
 * Client addresses from Envoy descriptors as counter subjects (DESIGN.md §8: every spelling of one
 * address is one counter; an unparseable address is an error, never "no IP limit").
 *
 * - `remote_address` (Envoy's trusted client address): the canonical address.
 * - `masked_remote_address` (Envoy's `a.b.c.d/len`, the client's network): the canonical network
 *   address with the host bits cleared, then `/len`, so `203.0.113.7/24` and `203.0.113.0/24`
 *   share one counter.
 *
 * TEMPORARY CALL SITE: `canonicalAddress` stands in for the one client-address canonicalisation the
 * `robust` branch is adding (lib/policy/ip-address.ts, issue #17). When it lands, this file calls
 * it and keeps only the network masking.
 */
import { isIPv4, isIPv6 } from "node:net";

export interface ParsedAddress {
  family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: number[];
}

function ipv4Bytes(text: string): number[] | null {
  if (!isIPv4(text)) return null;
  return text.split(".").map(Number);
}

function ipv6Bytes(text: string): number[] | null {
  if (!isIPv6(text) || text.includes("%")) return null;
  // WHATWG URL canonicalises IPv6 hosts (lower case, `::` compression, a dotted tail as hex).
  const host = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  const halves = host.split("::");
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length > 1 && halves[1] ? halves[1].split(":") : [];
  const groups = [...head, ...new Array<string>(8 - head.length - tail.length).fill("0"), ...tail];
  const bytes: number[] = [];
  for (const g of groups) {
    const w = parseInt(g, 16);
    bytes.push(w >> 8, w & 0xff);
  }
  return bytes.length === 16 ? bytes : null;
}

/** Parses an address; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is its IPv4 address. */
export function parseAddress(text: string): ParsedAddress | null {
  if (text.length === 0 || text.length > 45) return null;
  const v4 = ipv4Bytes(text);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = ipv6Bytes(text);
  if (!v6) return null;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
  return mapped ? { family: 4, bytes: v6.slice(12) } : { family: 6, bytes: v6 };
}

export function formatAddress(a: ParsedAddress): string {
  if (a.family === 4) return a.bytes.join(".");
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push((a.bytes[i]! << 8) | a.bytes[i + 1]!);
  // RFC 5952: the longest run of two or more zero words becomes `::` (the first, on a tie).
  let bestAt = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) {
      bestAt = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestAt === -1) return hex.join(":");
  return `${hex.slice(0, bestAt).join(":")}::${hex.slice(bestAt + bestLength).join(":")}`;
}

/** The canonical text of one address, or null when it is not an IP address. */
export function canonicalAddress(text: string): string | null {
  const parsed = parseAddress(text);
  return parsed ? formatAddress(parsed) : null;
}

/**
 * `a.b.c.d/len` or `v6/len` → the canonical network (`203.0.113.0/24`); null when either part is
 * malformed. A mapped IPv4 network keeps its meaning: `::ffff:203.0.113.7/120` is `203.0.113.0/24`.
 */
export function canonicalNetwork(text: string): string | null {
  const slash = text.lastIndexOf("/");
  if (slash === -1) return null;
  const lengthText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(lengthText)) return null;
  let prefix = Number(lengthText);
  const rawFamily = isIPv4(text.slice(0, slash)) ? 4 : 6;
  const parsed = parseAddress(text.slice(0, slash));
  if (!parsed || prefix > (rawFamily === 4 ? 32 : 128)) return null;
  if (rawFamily === 6 && parsed.family === 4) {
    if (prefix < 96) return null;
    prefix -= 96;
  }
  const bytes = parsed.bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
  return `${formatAddress({ family: parsed.family, bytes })}/${prefix}`;
}

/**
 * Client addresses as counter subjects: one rule for every way an address reaches the decision path
 * (`ip` in /v1/check, forward-auth's forwarding headers, gRPC's `remote_address`), so every spelling
 * of one address shares one counter and no spelling skips a per-IP limit. The rules (canonical form,
 * which header wins, trusted hops and proxies, the shared `unknown` subject): docs/decision-api.md
 * "Client addresses". Only the right end of X-Forwarded-For is trustworthy (every proxy appends the
 * address it received the request from); garbage in a header costs its sender the limit instead of
 * lifting it.
 */
import { canonicalIpAddress, parseIpAddress, parseIpRange, type IpRange, ipInRange } from "../policy/ip-address";

/** The counter subject of every request whose client address is missing or unparseable. */
export const UNKNOWN_CLIENT_ADDRESS = "unknown";

export type ClientAddressHeader = "x-forwarded-for" | "x-real-ip";
/** The values of SLUICE_CLIENT_ADDRESS_HEADER: X-Real-IP when present else X-Forwarded-For (the default), or one of them only. */
export const CLIENT_ADDRESS_SETTINGS = ["x-real-ip,x-forwarded-for", "x-forwarded-for", "x-real-ip"] as const;
export type ClientAddressSetting = (typeof CLIENT_ADDRESS_SETTINGS)[number];

export interface ClientAddressRules {
  /** Which forwarding header names the client (lower-case): one of them, or X-Real-IP when present else X-Forwarded-For. */
  header: ClientAddressSetting;
  /** X-Forwarded-For entries appended by trusted proxies, skipped from the right unconditionally. */
  trustedHops: number;
  /** Further entries skipped from the right while they lie in one of these ranges. */
  trustedProxies: readonly IpRange[];
}

export const DEFAULT_CLIENT_ADDRESS_RULES: ClientAddressRules = { header: "x-real-ip,x-forwarded-for", trustedHops: 0, trustedProxies: [] };

/** `10.0.0.0/8, 2001:db8::/32` → ranges; throws naming the bad entry (env validation). */
export function parseTrustedProxies(text: string): IpRange[] {
  const out: IpRange[] = [];
  for (const part of text.split(",")) {
    const entry = part.trim();
    if (entry === "") continue;
    const r = parseIpRange(entry);
    if (!r) throw new Error(`expected an address or CIDR range like 10.0.0.0/8, got ${JSON.stringify(entry)}`);
    out.push(r);
  }
  return out;
}

/** The canonical address, or null when `text` is not exactly an address (the /v1/check `ip` rule). */
export function canonicalClientAddress(text: string): string | null {
  return canonicalIpAddress(text);
}

/** One forwarding entry (port and brackets allowed, as proxies write them) → canonical address or null. */
function forwardedEntry(raw: string): string | null {
  let text = raw.trim();
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close === -1) return null;
    const rest = text.slice(close + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return null;
    text = text.slice(1, close);
  } else if (text.indexOf(":") !== -1 && text.indexOf(":") === text.lastIndexOf(":")) {
    // One colon: IPv4 with a port (an IPv6 address has at least two).
    const [host, port] = text.split(":") as [string, string];
    if (!/^\d{1,5}$/.test(port)) return null;
    text = host;
  }
  return canonicalIpAddress(text);
}

/**
 * The counter subject for an address from a source that must always give one (forward-auth's
 * headers, gRPC's `remote_address`): the canonical address, or UNKNOWN_CLIENT_ADDRESS.
 */
export function clientAddressOrUnknown(text: string | undefined): string {
  return (text === undefined ? null : forwardedEntry(text)) ?? UNKNOWN_CLIENT_ADDRESS;
}

/** The client's address from a gateway's forwarding headers under `rules`, or UNKNOWN_CLIENT_ADDRESS. */
export function clientAddressFromHeaders(header: (name: ClientAddressHeader) => string | undefined, rules: ClientAddressRules): string {
  // Trusted hops and proxies describe an X-Forwarded-For chain (X-Real-IP then names the last
  // proxy, not the client): configured, the default reads X-Forwarded-For.
  const chain = rules.trustedHops > 0 || rules.trustedProxies.length > 0;
  if (rules.header === "x-real-ip" || (rules.header === "x-real-ip,x-forwarded-for" && !chain)) {
    const real = header("x-real-ip");
    // X-Real-IP names one address; a list there (duplicated headers, joined) has no single meaning.
    if (real !== undefined && real.trim() !== "") return clientAddressOrUnknown(real);
    if (rules.header === "x-real-ip") return UNKNOWN_CLIENT_ADDRESS;
  }
  const value = header("x-forwarded-for");
  if (value === undefined || value.trim() === "") return UNKNOWN_CLIENT_ADDRESS;
  const entries = value.split(",");
  let i = entries.length - 1 - rules.trustedHops;
  if (i < 0) return clientAddressOrUnknown(entries[0]);
  while (i > 0 && rules.trustedProxies.length > 0) {
    const parsed = forwardedEntry(entries[i]!);
    const ip = parsed === null ? null : parseIpAddress(parsed);
    if (ip === null || !rules.trustedProxies.some((r) => ipInRange(ip, r))) break;
    i--;
  }
  return clientAddressOrUnknown(entries[i]);
}

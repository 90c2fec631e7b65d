/**
 * Alert webhook delivery: HTTPS POST of a JSON body, retried with exponential backoff, never to an
 * address that is not globally reachable (SSRF), never following redirects. `allowPrivate` (env
 * ALERT_WEBHOOK_ALLOW_PRIVATE=1) lifts the address and HTTPS rules, for tests only.
 *
 * The guard compares numbers, not text (lib/policy/ip-address.ts): every spelling of 127.0.0.1
 * and 169.254.169.254, and every IPv4 address embedded in IPv6 (mapped, compatible, NAT64, 6to4,
 * Teredo, ISATAP), is judged as the IPv4 address it carries. A host name is resolved once, every
 * address it resolves to must be global, and the request connects to the address that was
 * checked (DNS rebinding: a second lookup at connect time could answer 127.0.0.1); TLS still
 * verifies the certificate against the host name. The socket's remote address is checked again
 * once connected, so no path (a proxy, a library change) can land somewhere unchecked.
 */
import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import { notGlobalReason, parseIpAddress } from "../../policy/ip-address";

/** Host name → addresses (all of them). The default asks the system resolver, like fetch would. */
export type Resolver = (hostname: string) => Promise<string[]>;

const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** Why an address may not be called (`loopback via IPv4-mapped (127.0.0.1)`), or null when it may. */
export function refusedAddressReason(address: string): string | null {
  const ip = parseIpAddress(address);
  if (!ip) return "not an IP address";
  return notGlobalReason(ip);
}

export interface Destination {
  url: URL;
  /** The address to connect to, checked; null with allowPrivate when the host is left to the system. */
  address: string | null;
}

/** Checks the URL and resolves its host once; throws with a reason when it may not be called. */
export async function resolveDestination(raw: string, allowPrivate: boolean, resolve: Resolver = systemResolver): Promise<Destination> {
  const url = new URL(raw);
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) throw new Error("webhook URL must use https");
  if (url.username || url.password) throw new Error("webhook URL must not carry credentials");
  if (allowPrivate) return { url, address: null };
  // WHATWG URL has already canonicalised IPv4 (`0x7f.1` → 127.0.0.1) and IPv6 (brackets kept).
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const literal = parseIpAddress(host) !== null;
  const addresses = literal ? [host] : await resolve(host);
  if (addresses.length === 0) throw new Error(`webhook host ${host} resolves to no address`);
  for (const address of addresses) {
    const why = refusedAddressReason(address);
    if (why) throw new Error(`webhook ${literal ? "address" : `host ${host} resolves to`} ${address}, which is not globally reachable (${why})`);
  }
  return { url, address: addresses[0]! };
}

/** Throws with a reason when the URL may not be called (the check of resolveDestination). */
export async function assertDeliverable(raw: string, allowPrivate: boolean, resolve?: Resolver): Promise<URL> {
  return (await resolveDestination(raw, allowPrivate, resolve)).url;
}

export interface DeliveryResult {
  ok: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
}

class RefusedPeer extends Error {}

/** One POST to the checked address; resolves with the status (redirects are answers, never followed). */
function postOnce(dest: Destination, payload: string, allowPrivate: boolean, timeoutMs: number, extraHeaders: Record<string, string> = {}): Promise<number> {
  const { url, address } = dest;
  const client = url.protocol === "https:" ? https : http;
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return new Promise((resolve, reject) => {
    const req = client.request(
      {
        method: "POST",
        host: address ?? hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        // TLS checks the certificate against the name, SNI carries it, Host names it: only the
        // socket goes to the checked address. (No SNI for an IP literal.)
        servername: parseIpAddress(hostname) ? undefined : hostname,
        headers: { host: url.host, "content-type": "application/json", "content-length": Buffer.byteLength(payload), "user-agent": "sluice-alerts/1", ...extraHeaders },
        signal: AbortSignal.timeout(timeoutMs),
        agent: false,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("socket", (socket: Socket) => {
      socket.once("connect", () => {
        const why = allowPrivate ? null : refusedAddressReason(socket.remoteAddress ?? "");
        if (why) req.destroy(new RefusedPeer(`connected to ${socket.remoteAddress ?? "?"}, which is not globally reachable (${why})`));
      });
    });
    req.on("error", reject);
    req.end(payload);
  });
}

export async function deliverWebhook(
  raw: string,
  body: unknown,
  {
    allowPrivate,
    attempts = 4,
    baseDelayMs = 500,
    timeoutMs = 5_000,
    resolve,
    headers,
  }: {
    allowPrivate: boolean;
    attempts?: number;
    baseDelayMs?: number;
    timeoutMs?: number;
    resolve?: Resolver;
    /** Sent with every attempt (a signature, its timestamp); they may replace content-type and user-agent. */
    headers?: (payload: string) => Record<string, string>;
  },
): Promise<DeliveryResult> {
  let dest: Destination;
  try {
    dest = await resolveDestination(raw, allowPrivate, resolve);
  } catch (error) {
    return { ok: false, attempts: 0, status: null, error: error instanceof Error ? error.message : String(error) };
  }
  // A string body is sent as is (bytes a signature covers); anything else as its JSON.
  const payload = typeof body === "string" ? body : JSON.stringify(body);
  let last: DeliveryResult = { ok: false, attempts: 0, status: null, error: null };
  for (let i = 1; i <= attempts; i++) {
    try {
      const status = await postOnce(dest, payload, allowPrivate, timeoutMs, headers?.(payload));
      if (status >= 200 && status < 300) return { ok: true, attempts: i, status, error: null };
      last = { ok: false, attempts: i, status, error: `HTTP ${status}` };
      if (status >= 300 && status < 500 && status !== 429) return last; // redirects and client errors are not retried
    } catch (error) {
      last = { ok: false, attempts: i, status: null, error: error instanceof Error ? error.message : String(error) };
      if (error instanceof RefusedPeer) return last;
    }
    if (i < attempts) await new Promise((r) => setTimeout(r, baseDelayMs * 2 ** (i - 1)));
  }
  return last;
}

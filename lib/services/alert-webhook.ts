/**
 * Alert webhook delivery: HTTPS POST of a JSON body, retried with exponential backoff, never to a
 * private, loopback or link-local address (SSRF), never following redirects. `allowPrivate` (env
 * ALERT_WEBHOOK_ALLOW_PRIVATE=1) lifts the address and HTTPS rules, for tests only.
 */
import { lookup } from "node:dns/promises";
import net from "node:net";

export function isPrivateAddress(address: string): boolean {
  if (net.isIPv4(address)) {
    const [a, b] = address.split(".").map(Number) as [number, number];
    return (
      a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a >= 224
    );
  }
  const v6 = address.toLowerCase();
  if (v6 === "::1" || v6 === "::") return true;
  if (v6.startsWith("::ffff:")) return isPrivateAddress(v6.slice(7));
  return v6.startsWith("fc") || v6.startsWith("fd") || v6.startsWith("fe8") || v6.startsWith("fe9") || v6.startsWith("fea") || v6.startsWith("feb") || v6.startsWith("ff");
}

/** Throws with a reason when the URL may not be called. */
export async function assertDeliverable(raw: string, allowPrivate: boolean): Promise<URL> {
  const url = new URL(raw);
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) throw new Error("webhook URL must use https");
  if (url.username || url.password) throw new Error("webhook URL must not carry credentials");
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const addresses = net.isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    if (addresses.length === 0 || addresses.some(isPrivateAddress)) throw new Error(`webhook host ${host} resolves to a private, loopback or link-local address`);
  }
  return url;
}

export interface DeliveryResult {
  ok: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
}

export async function deliverWebhook(
  raw: string,
  body: unknown,
  { allowPrivate, attempts = 4, baseDelayMs = 500, timeoutMs = 5_000 }: { allowPrivate: boolean; attempts?: number; baseDelayMs?: number; timeoutMs?: number },
): Promise<DeliveryResult> {
  let url: URL;
  try {
    url = await assertDeliverable(raw, allowPrivate);
  } catch (error) {
    return { ok: false, attempts: 0, status: null, error: error instanceof Error ? error.message : String(error) };
  }
  let last: DeliveryResult = { ok: false, attempts: 0, status: null, error: null };
  for (let i = 1; i <= attempts; i++) {
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "sluice-alerts/1" },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 200 && response.status < 300) return { ok: true, attempts: i, status: response.status, error: null };
      last = { ok: false, attempts: i, status: response.status, error: `HTTP ${response.status}` };
      if (response.status >= 300 && response.status < 500 && response.status !== 429) return last; // redirects and client errors are not retried
    } catch (error) {
      last = { ok: false, attempts: i, status: null, error: error instanceof Error ? error.message : String(error) };
    }
    if (i < attempts) await new Promise((r) => setTimeout(r, baseDelayMs * 2 ** (i - 1)));
  }
  return last;
}

/**
 * A lease id names the counter it lives in, so `release(leaseId)` needs nothing else:
 * `<token>.<cost>.<counter key>` (token: 32 hex, no dots; the key may contain dots, so it comes last).
 */

/** 32 random hex characters, from Web Crypto (in Node and in the browser, where the simulator runs the memory store). */
export function newLeaseToken(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return hex;
}

export function formatLeaseId(token: string, cost: number, key: string): string {
  return `${token}.${cost}.${key}`;
}

export function parseLeaseId(leaseId: string): { token: string; cost: number; key: string } | null {
  const match = /^([0-9a-f]{32})\.([1-9][0-9]{0,9})\.(.+)$/.exec(leaseId);
  if (!match) return null;
  return { token: match[1], cost: Number(match[2]), key: match[3] };
}

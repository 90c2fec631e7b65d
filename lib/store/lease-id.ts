/**
 * A lease id, `<token>.<cost>.<counter key>` (token: 32 hex; the key may contain dots, so it comes
 * last), names its counter, so `release(leaseId)` needs nothing else. Its holder can change it, so
 * the store checks its units against the ones it granted (docs/security.md).
 */

/** The units a lease was granted: a STRING `<counter key>:lease:<token>` (the counter's slot), written by DECIDE, expiring with the lease. */
export const LEASE_RECORD_SUFFIX = ":lease:";

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

/** A release whose lease id names other units than its live lease was granted: changed by its holder, never issued. Nothing was freed. */
export class ForgedLeaseError extends Error {
  constructor() {
    super("the lease id does not match its lease: not an id this server issued");
    this.name = "ForgedLeaseError";
  }
}

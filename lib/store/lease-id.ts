/**
 * A lease id names the counter it lives in, so `release(leaseId)` needs nothing else:
 * `<token>.<cost>.<counter key>` (token: 32 hex, no dots; the key may contain dots, so it comes last).
 *
 * Its holder can change it, so nothing in it is trusted beyond what the store can check: the store
 * keeps the units each lease was granted (lib/store/lua/concurrency.ts, the pure twin's `granted`)
 * and a release whose id names other units frees nothing and fails with {@link ForgedLeaseError};
 * what it loops over is the units the store granted, never the number in the id (issue #30).
 */

/**
 * The record of the units a lease was granted: a STRING `<counter key>:lease:<token>` (the counter's
 * hash tag, so its slot), written by DECIDE with the lease and expiring with it, read by RELEASE.
 */
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

/**
 * A lease id names the counter it lives in, so `release(leaseId)` needs nothing else:
 * `<token>.<cost>.<counter key>` (token: 32 hex, no dots; the key may contain dots, so it comes last).
 */
import { randomUUID } from "node:crypto";

export function newLeaseToken(): string {
  return randomUUID().replace(/-/g, "");
}

export function formatLeaseId(token: string, cost: number, key: string): string {
  return `${token}.${cost}.${key}`;
}

export function parseLeaseId(leaseId: string): { token: string; cost: number; key: string } | null {
  const match = /^([0-9a-f]{32})\.([1-9][0-9]{0,9})\.(.+)$/.exec(leaseId);
  if (!match) return null;
  return { token: match[1], cost: Number(match[2]), key: match[3] };
}

/**
 * Concurrency leases: releasing one (RELEASE, lib/store/lua/release.ts), and giving back the
 * leases of a reply that came too late for anyone to hold them.
 */
import { ForgedLeaseError, parseLeaseId } from "../lease-id";
import { RELEASE_LUA } from "../lua/release";
import type { CheckOutcome } from "../types";
import { type Loader, script } from "./loader";

const RELEASE = script(RELEASE_LUA);

export interface Leases {
  /** Frees a lease: false when unknown or expired; ForgedLeaseError when its id was changed. */
  release(leaseId: string): Promise<boolean>;
  /**
   * A decision whose reply came after its budget: its caller was answered without it (failed open,
   * or 503), so nobody holds the ids of the concurrency leases the script took. Left alone, each
   * would keep its tenant at the limit for the lease's whole TTL after a slow moment of Redis (a
   * 30 s lockout for a limit of 1). They are released as soon as the reply arrives. Counters the
   * script consumed stay consumed: the request did pass.
   */
  giveBack(result: { allowed: boolean; outcomes: readonly CheckOutcome[] }): void;
}

export function createLeases(loader: Loader, nowArg: () => string): Leases {
  async function release(leaseId: string): Promise<boolean> {
    const lease = parseLeaseId(leaseId);
    if (!lease) return false;
    const released = await loader.run(RELEASE, [lease.key], [lease.token, String(lease.cost), nowArg()]);
    if (released === -1) throw new ForgedLeaseError();
    return released === 1;
  }
  return {
    release,
    giveBack(result) {
      if (!result.allowed) return;
      for (const o of result.outcomes) if (o.leaseId) release(o.leaseId).catch(() => undefined);
    },
  };
}

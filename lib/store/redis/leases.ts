/** Concurrency leases: releasing one (RELEASE, lib/store/lua/release.ts), and giving back those of a reply nobody waited for. */
import { ForgedLeaseError, parseLeaseId } from "../lease-id";
import { RELEASE_LUA } from "../lua/release";
import type { CheckOutcome } from "../types";
import { type Loader, script } from "./loader";

const RELEASE = script(RELEASE_LUA);

export interface Leases {
  release(leaseId: string): Promise<boolean>;
  /**
   * A reply that came after its budget: nobody holds its leases, and each would keep its tenant at the
   * limit for its whole TTL (30 s for a limit of 1), so they are released now (its counters stay).
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

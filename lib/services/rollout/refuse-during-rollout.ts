/** The one rule publish, rollback and discard share with rollouts: none of them while a rollout holds the policy. */
import type { Tx } from "../../db/client";
import { findActiveRollout } from "../../db/rollout-repo";
import { ServiceError } from "../errors";
import { describeRollout } from "./rollout-view";

/** Refuses `what` while a rollout is running or paused (call under the policy lock). */
export async function refuseDuringRollout(tx: Tx, what: string): Promise<void> {
  const r = await findActiveRollout(tx);
  if (r) {
    throw new ServiceError("conflict", `no ${what} while rollout ${r.id} is ${r.state} (${describeRollout(r).stepLabel}): promote it to the end or abort it first`, { field: "rollout" });
  }
}

/**
 * `sluice rollback --to N`: republish the document of version N as a new version N' (versions only
 * grow, so every decision server moves forward to it and the history says what happened), with the
 * billing and plan-change stamps of what the rollback itself changes (lib/policy/publish-stamps.ts), and
 * reset the draft to it in the same transaction: the rolled-back state is where you end up, so the
 * next publish cannot re-ship what was rolled back (docs/architecture.md, "Draft and live").
 * Unpublished draft changes are discarded by a rollback; each reset row has its audit entry. In
 * single-node mode (`deps.redis` null) the new version is written to Postgres only, as publish does.
 */
import { z } from "zod";
import { findPolicyVersion, lockPolicy } from "../../db/policy-repo";
import { bodyOf } from "../../policy/compile";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { pendingChangesIn, resetDraftIn } from "./discard-draft";
import { ServiceError } from "../errors";
import { refuseDuringRollout } from "../rollout/refuse-during-rollout";
import { publishBody, type PublishDeps, type PublishResult } from "./publish-policy";

/** POST /api/v1/policy/rollback's body (the route and its OpenAPI document use this one schema). */
export const rollbackRequestSchema = z.strictObject({
  version: z.number("expected an integer ≥ 1").int("expected an integer ≥ 1").min(1, "expected an integer ≥ 1"),
  note: z.string().max(500).optional(),
});

export interface RollbackResult extends PublishResult {
  /** Draft rows the reset changed; null when the old document no longer validates (draftNote says why). */
  draftReset: number | null;
  /** The draft's unpublished changes the rollback discarded (rows that differed from the live version before it). */
  pendingDiscarded: number;
  draftNote?: string;
}

export async function rollbackPolicy(
  deps: PublishDeps,
  options: { actor: string; toVersion: number; note?: string; nowMs?: number },
): Promise<RollbackResult> {
  if (!Number.isSafeInteger(options.toVersion) || options.toVersion < 1) {
    throw new ServiceError("invalid_request", "version: expected an integer ≥ 1", { field: "version" });
  }
  const nowMs = options.nowMs ?? Date.now();
  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      await refuseDuringRollout(tx, "rollback");
      const target = await findPolicyVersion(tx, options.toVersion);
      if (!target) throw new ServiceError("not_found", `policy version ${options.toVersion} does not exist`, { field: "version" });
      const stored = parseCompiledPolicy(target.document);
      if (!stored.ok) throw new ServiceError("conflict", `stored policy v${target.version} does not validate`, { field: "version" });
      // Counted before the publish: what differed from the version live until now.
      const pendingDiscarded = await pendingChangesIn(tx, options.actor, nowMs);
      const { doc, previousVersion, regionsMissed } = await publishBody(tx, deps.redis, bodyOf(stored.value), {
        actor: options.actor,
        note: options.note ?? `rollback to v${target.version}`,
        rolledBackFrom: target.version,
        nowMs,
      });
      const reset = await resetDraftIn(tx, doc, options.actor, nowMs);
      return {
        status: "published" as const,
        version: doc.version,
        checksum: doc.checksum,
        previousVersion,
        draftReset: reset.changes,
        pendingDiscarded: reset.changes === null ? 0 : pendingDiscarded,
        ...(regionsMissed ? { regionsMissed } : {}),
        ...("reason" in reset ? { draftNote: `the draft was left as it was: v${target.version} no longer validates (${reset.reason})` } : {}),
      };
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

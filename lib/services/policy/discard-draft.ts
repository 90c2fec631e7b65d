/**
 * "Discard draft / reset to live": the draft becomes the live version again (docs/architecture.md,
 * "Draft and live"). Rollback uses the same reset, so the rolled-back version is where both the
 * live policy and the draft end up, and the next publish cannot re-ship what was rolled back.
 *
 * The reset is an edit like any other (lib/services/policy/edit-policy.ts): under the policy lock, one
 * audit entry per row it changes plus one `policy.discard_draft` entry, the role checked per field
 * (discarding needs policy.edit; a draft failure mode differing from live needs failure_mode.set).
 * API keys are not part of a version: they stay as they are, except the keys of tenants the live
 * version does not have, which go with their tenant.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { can } from "../../auth/permissions";
import { writeAudit } from "../../db/audit";
import type { Tx } from "../../db/client";
import type { CompiledPolicy, CompiledPolicyBody } from "../../policy/compiled";
import { bodyOf } from "../../policy/compile";
import { specFromDocument } from "../../policy/decompile";
import { orderByNames } from "../../policy/order";
import { editPolicy, editPolicyIn, type DraftEdit, type EditResult, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";
import { readPublishedVersion } from "./published-version";
import { refuseDuringRollout } from "../rollout/refuse-during-rollout";

/**
 * The edit that turns any draft into `doc`, keeping the draft's spelling where it compiles the same,
 * and the tiers in the order the version was published in (`tierOrder`; empty for versions
 * published before it was kept: the draft's order then).
 */
export function resetTo(doc: CompiledPolicyBody, tierOrder: readonly string[] = []): DraftEdit {
  const body = bodyOf(doc);
  return (draft) => {
    const spec = specFromDocument(body, draft.spec);
    return {
      spec: { ...spec, tiers: orderByNames(spec.tiers, tierOrder, (t) => t.name) },
      keys: draft.keys.filter((k) => Object.hasOwn(body.tenants, k.tenant)),
    };
  };
}

/** The tier order version `version` was published with (PolicyVersion.tierOrder). */
async function tierOrderOf(tx: Tx, version: number): Promise<string[]> {
  return (await tx.policyVersion.findUnique({ where: { version }, select: { tierOrder: true } }))?.tierOrder ?? [];
}

const changeCount = (r: EditResult) => (r.applied ? r.plan.created.length + r.plan.changed.length + r.plan.deleted.length : 0);

export interface DiscardResult {
  /** The live version the draft now equals. */
  version: number;
  /** Rows of the draft the reset changed (0: the draft already equalled live). */
  changes: number;
}

export async function discardDraft(db: PrismaClient, editor: Editor, options: { nowMs?: number } = {}): Promise<DiscardResult> {
  if (!can(editor.role, "policy.edit")) throw new ServiceError("forbidden", `the ${editor.role} role may not edit the draft policy`);
  let live: CompiledPolicy | null = null;
  let tierOrder: string[] = [];
  const result = await editPolicy(
    db,
    (draft, context) => {
      if (!live) return null;
      return resetTo(live, tierOrder)(draft, context);
    },
    editor,
    {
      nowMs: options.nowMs,
      beforeEdit: async (tx) => {
        await refuseDuringRollout(tx, "discard of the draft");
        try {
          live = await readPublishedVersion(tx);
          tierOrder = await tierOrderOf(tx, live.version);
        } catch (error) {
          if (error instanceof ServiceError && error.code === "not_found") {
            throw new ServiceError("conflict", "nothing is published yet: there is no live version to reset the draft to", { field: "version" });
          }
          throw error;
        }
      },
      afterWrite: async (tx, r) => {
        await writeAudit(tx, {
          actor: editor.actor,
          action: "policy.discard_draft",
          entity: "policy",
          entityId: String(live!.version),
          before: null,
          after: { resetTo: live!.version, changes: changeCount(r) },
        });
      },
    },
  );
  return { version: (live as CompiledPolicy | null)?.version ?? 0, changes: changeCount(result) };
}

/**
 * The draft's unpublished changes: the rows a reset to the live version would change (a dry run;
 * 0 when nothing is published or the draft equals live). What a rollback discards, as the user
 * counts it — not the rows the rollback's own reset rewrites, which include everything that
 * differs between live and the version rolled back to.
 */
export async function pendingChangesIn(tx: Tx, actor: string, nowMs: number): Promise<number> {
  let live: CompiledPolicy;
  try {
    live = await readPublishedVersion(tx);
  } catch (error) {
    if (error instanceof ServiceError && error.code === "not_found") return 0;
    throw error;
  }
  try {
    const r = await editPolicyIn(tx, resetTo(live, await tierOrderOf(tx, live.version)), { actor, role: "admin" }, { nowMs, fieldCheck: false, dryRun: true });
    return r.plan.created.length + r.plan.changed.length + r.plan.deleted.length;
  } catch (error) {
    if (error instanceof ServiceError && error.code === "invalid_policy") return 0;
    throw error;
  }
}

/**
 * Inside a rollback's transaction (which holds the lock): the draft becomes `doc`, the version just
 * made live. Returns the rows changed, or null with the reason when the document no longer passes
 * today's validation (the rollback still stands; the draft is left as it was, and the caller says so).
 */
export async function resetDraftIn(tx: Tx, doc: CompiledPolicy, actor: string, nowMs: number): Promise<{ changes: number } | { changes: null; reason: string }> {
  try {
    // The role check is the rollback's (policy.publish): the reset only writes into the draft what
    // the rollback has just made live.
    const result = await editPolicyIn(tx, resetTo(doc, await tierOrderOf(tx, doc.version)), { actor, role: "admin" }, { nowMs, fieldCheck: false });
    return { changes: changeCount(result) };
  } catch (error) {
    if (error instanceof ServiceError && error.code === "invalid_policy") return { changes: null, reason: error.message };
    throw error;
  }
}

/**
 * Failure modes applied to the live policy on their own (#18 job 3; docs/failure-modes.md, "Changing
 * a failure mode"): what a decision does when Redis cannot answer is operational, so an SRE puts a
 * change into effect without publishing the draft. One transaction under the policy lock:
 *
 *   1. the live version's document, read back into the file's shape (lib/policy/decompile.ts),
 *      with the requested failure modes set, compiled and published as a new version whose only
 *      differences from the previous one are those failure modes (the product team's pending draft
 *      changes are not shipped);
 *   2. the same failure modes written into the draft (one edit, one audit entry per row), so the
 *      draft keeps its pending changes and the next publish does not undo the SRE's;
 *   3. an audit entry `failure_mode.apply` with the fields before and after.
 *
 * Needs failure_mode.set (sre, admin); the draft edit is checked per field as every edit is.
 */
import { can } from "../../auth/permissions";
import { writeAudit } from "../../db/audit";
import { latestPolicyVersion, lockPolicy } from "../../db/policy-repo";
import { bodyOf, compilePolicy, policyChecksum, type PolicySpec } from "../../policy/compile";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { specFromDocument } from "../../policy/decompile";
import { FAILURE_MODES, type FailureMode } from "../../policy/types";
import { z } from "zod";
import { editPolicyIn, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";
import { publishBody, type PublishDeps } from "./publish-policy";

export const failureModesInput = z.strictObject({
  /** The default of operations without their own; omitted: unchanged. */
  default: z.enum(FAILURE_MODES).optional(),
  /** Per operation: a mode, or null to follow the default again. Operations not listed are unchanged. */
  operations: z
    .array(z.strictObject({ name: z.string().min(1).max(63), failureMode: z.enum(FAILURE_MODES).nullable() }))
    .max(1000)
    .default([]),
  note: z.string().trim().max(500).optional(),
});
export type FailureModesInput = z.input<typeof failureModesInput>;

export interface ApplyFailureModesResult {
  status: "published" | "unchanged";
  /** The live version after the call (the new one when published). */
  version: number;
  previousVersion: number;
  /** Every operation's effective failure mode that changed, and the default if it did. */
  changed: { field: string; before: FailureMode; after: FailureMode }[];
}

/** Sets the requested failure modes on a spec (in place); `where` names the spec in errors. */
function setModes(spec: PolicySpec, input: z.output<typeof failureModesInput>, where: "live" | "draft"): void {
  if (input.default) spec.defaults = { ...spec.defaults, failureMode: input.default };
  input.operations.forEach((o, i) => {
    const op = spec.operations.find((x) => x.name === o.name);
    if (!op) {
      if (where === "draft") return; // deleted in the draft: its live mode still changes
      throw new ServiceError("not_found", `operations[${i}].name: operation ${o.name} is not in the live policy (a draft operation's failure mode goes live when it is published)`, {
        field: `operations[${i}].name`,
      });
    }
    if (o.failureMode === null) delete op.failureMode;
    else op.failureMode = o.failureMode;
  });
}

function effectiveModes(body: { defaults: { failureMode: FailureMode }; operations: Record<string, { failureMode: FailureMode }> }) {
  const out = new Map<string, FailureMode>([["defaults.failureMode", body.defaults.failureMode]]);
  for (const [name, op] of Object.entries(body.operations)) out.set(`operations.${name}.failureMode`, op.failureMode);
  return out;
}

export async function applyFailureModes(deps: PublishDeps, raw: unknown, editor: Editor, options: { nowMs?: number } = {}): Promise<ApplyFailureModesResult> {
  const parsed = failureModesInput.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "") || "body";
    throw new ServiceError("invalid_request", `${field}: ${issue.message}`, { field });
  }
  const input = parsed.data;
  if (!can(editor.role, "failure_mode.set")) throw new ServiceError("forbidden", `the ${editor.role} role may not set failure modes`);
  const nowMs = options.nowMs ?? Date.now();

  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const latest = await latestPolicyVersion(tx);
      if (!latest) throw new ServiceError("conflict", "nothing is published yet: publish the policy once, then apply failure modes to it", { field: "version" });
      const stored = parseCompiledPolicy(latest.document);
      if (!stored.ok) throw new ServiceError("conflict", `stored policy v${latest.version} does not validate`);
      const live = bodyOf(stored.value);

      // The draft first (its spelling is the hint for reading the live document back).
      let draftSpec: PolicySpec | null = null;
      await editPolicyIn(
        tx,
        (draft) => {
          draftSpec = structuredClone(draft.spec);
          setModes(draft.spec, input, "draft");
          return draft;
        },
        editor,
        { nowMs },
      );

      const spec = specFromDocument(live, draftSpec ?? undefined);
      setModes(spec, input, "live");
      const next = compilePolicy(spec);
      const before = effectiveModes(live);
      const after = effectiveModes(next);
      const changed = [...after].filter(([field, mode]) => before.get(field) !== mode).map(([field, mode]) => ({ field, before: before.get(field)!, after: mode }));
      if (changed.length === 0 || policyChecksum(next) === latest.checksum) {
        return { status: "unchanged" as const, version: latest.version, previousVersion: latest.version, changed: [] };
      }
      const label = (field: string) => (field === "defaults.failureMode" ? "default" : field.slice("operations.".length, -".failureMode".length));
      const note = input.note || `failure modes: ${changed.map((c) => `${label(c.field)} ${c.before} → ${c.after}`).join(", ")}`;
      const { doc } = await publishBody(tx, deps.redis, next, { actor: editor.actor, note, nowMs });
      await writeAudit(tx, {
        actor: editor.actor,
        action: "failure_mode.apply",
        entity: "policy",
        entityId: String(doc.version),
        before: Object.fromEntries(changed.map((c) => [c.field, c.before])),
        after: Object.fromEntries(changed.map((c) => [c.field, c.after])),
      });
      return { status: "published" as const, version: doc.version, previousVersion: latest.version, changed };
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

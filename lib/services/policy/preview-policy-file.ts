/**
 * The Policy page's "apply a policy file": first a dry run of applyPolicyFile (the same service as
 * `sluice apply -f` and `POST /api/v1/policy/apply`), shown as one line per change, with what the
 * role may not change named by field; then the apply itself, into the draft. A file that does not
 * parse or validate is refused with every issue's path (ServiceError invalid_policy), writing nothing.
 */
import { deniedChanges, type DeniedChange } from "../../auth/permissions";
import { changedFields, type PlanChange, type PolicyPlan } from "../../policy/plan";
import { applyPolicyFile, type ApplyResult } from "./apply-policy-file";
import type { Editor } from "./edit-policy";
import { ServiceError } from "../errors";

/** The largest file the page takes (the API takes what its body limit allows). */
export const MAX_POLICY_FILE_CHARS = 512 * 1024;

export interface PlanLine {
  kind: "added" | "changed" | "removed";
  entity: string;
  /** The natural key: `free/export/tenant/token_bucket`, `acme/ci`. */
  key: string;
  /** For a change, the fields that differ: `limit: 100 → 150`. */
  text: string;
}

export interface PolicyFilePreview {
  lines: PlanLine[];
  warnings: string[];
  /** Changes the role may not make: applying the file would be refused on the first of these. */
  refused: DeniedChange[];
}

function value(record: PlanChange["before"], field: string): string {
  const v = (record as Record<string, unknown> | null)?.[field];
  return v === undefined ? "unset" : JSON.stringify(v);
}

/** One line per planned change, created first, as the CLI prints them. */
export function planLines(plan: PolicyPlan): PlanLine[] {
  const changed = (c: PlanChange) =>
    c.entity === "envoyDomain" ? "its rules" : changedFields(c).map((f) => `${f}: ${value(c.before, f)} → ${value(c.after, f)}`).join(", ");
  return [
    ...plan.created.map((c) => ({ kind: "added" as const, entity: c.entity, key: c.key, text: "" })),
    ...plan.changed.map((c) => ({ kind: "changed" as const, entity: c.entity, key: c.key, text: changed(c) })),
    ...plan.deleted.map((c) => ({ kind: "removed" as const, entity: c.entity, key: c.key, text: "" })),
  ];
}

function checkSize(text: string): void {
  if (text.trim() === "") throw new ServiceError("invalid_request", "file: paste a policy file or choose one", { field: "file" });
  if (text.length > MAX_POLICY_FILE_CHARS) throw new ServiceError("invalid_request", `file: at most ${MAX_POLICY_FILE_CHARS / 1024} KiB`, { field: "file" });
}

/** What applying `text` would change in the draft, and what of it `editor`'s role may not change. Writes nothing. */
export async function previewPolicyFile(db: Parameters<typeof applyPolicyFile>[0], text: string, editor: Editor): Promise<PolicyFilePreview> {
  checkSize(text);
  const { plan } = await applyPolicyFile(db, text, { actor: editor.actor, role: editor.role, dryRun: true });
  return { lines: planLines(plan), warnings: plan.warnings, refused: deniedChanges(editor.role, plan) };
}

/** Applies `text` to the draft (one transaction, one audit entry per change). */
export async function applyPolicyFileText(db: Parameters<typeof applyPolicyFile>[0], text: string, editor: Editor): Promise<ApplyResult> {
  checkSize(text);
  return applyPolicyFile(db, text, { actor: editor.actor, role: editor.role });
}

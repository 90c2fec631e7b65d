/**
 * Draft edits from the UI go through the same use case as `sluice apply` and
 * `POST /api/v1/policy/apply`: read the draft as a policy file, change one part, apply the file —
 * read and apply in one transaction under the policy lock (`applyPolicyEdit`).
 * The apply service validates with the policy file's schema, writes one transaction with an audit
 * entry per change, and leaves API keys alone. No second implementation of any rule.
 */
import type { ActionResult, FieldIssue } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import type { PolicySpec } from "@/lib/policy/compile";
import { applyPolicyEdit } from "@/lib/services/apply-policy-file";
import { ServiceError } from "@/lib/services/errors";

/** `tiers[2].limits[0].window` → `["tiers", 2, "limits", 0, "window"]` */
function pathParts(path: string): (string | number)[] {
  const parts: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) parts.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return parts;
}

/**
 * Applies `mutate(draft)`. `scope` re-roots issue paths to the edited object, e.g. scope
 * ["tiers", 2] turns `tiers[2].limits[0].window` into `limits.0.window` for the form.
 */
export async function editDraft(
  actor: string,
  mutate: (spec: PolicySpec) => PolicySpec | { error: FieldIssue },
  scope: (spec: PolicySpec) => (string | number)[] = () => [],
  message = "Saved to the draft.",
): Promise<ActionResult> {
  // Read and apply under one lock (applyPolicyEdit): concurrent editors never undo each other.
  const captured: { error?: FieldIssue; next?: PolicySpec } = {};
  try {
    const result = await applyPolicyEdit(
      db(),
      (draft) => {
        const next = mutate(draft);
        if ("error" in next) {
          captured.error = next.error;
          return null;
        }
        captured.next = next;
        return next;
      },
      { actor },
    );
    if (captured.error) return { ok: false, status: 400, message: captured.error.message, issues: [captured.error] };
    return { ok: true, message: result.applied ? message : "Nothing changed." };
  } catch (error) {
    if (error instanceof ServiceError) {
      const root = captured.next ? scope(captured.next) : [];
      const issues = error.issues.map((i) => {
        const parts = pathParts(i.path);
        const inside = root.length > 0 && root.every((p, k) => parts[k] === p);
        return { path: (inside ? parts.slice(root.length) : parts).join("."), message: i.message };
      });
      return { ok: false, status: error.status as 400, message: error.message, issues };
    }
    throw error;
  }
}

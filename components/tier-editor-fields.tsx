/**
 * The tier editor's form parts (./tier-editor.tsx, ./limit-cell-editor.tsx, ./quota-rows.tsx): a
 * labelled field with its error, and the policy file's zod issues as one message per field.
 */
import { plainMessage } from "@/lib/policy/plain-messages";

export const numberOrUndefined = (v: string) => (v.trim() === "" ? undefined : Number(v));
export const textOrUndefined = (v: string) => (v.trim() === "" ? undefined : v.trim());

/** The first issue of each top-level field, in plain words. */
export function fieldErrors(result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }): Record<string, string> {
  const errors: Record<string, string> = {};
  if (result.success || !result.error) return errors;
  for (const issue of result.error.issues) {
    const key = String(issue.path[0] ?? "");
    errors[key] ??= plainMessage(issue.message);
  }
  return errors;
}

export function Field({ id, label, error, children }: { id: string; label: string; error?: string; children: React.ReactNode }) {
  return (
    <div>
      <label htmlFor={id} className="label">
        {label}
      </label>
      {children}
      {error && (
        <p id={`${id}-error`} className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** Server messages about an override, said in the override form's terms (components/overrides-editor.tsx). */
export const FIELD_WORDS: Record<string, string> = { window: "Window", limit: "Limit", burst: "Burst", algorithm: "Algorithm", scope: "Scope", period: "Period", operation: "Operation", expiresAt: "Expires" };

/**
 * A server message in the form's terms: without the policy file's path
 * (`tenants[11].overrides[0].window: `), and "required: tier startup has no sliding_window_counter
 * limit for operation export, scope tenant to inherit it from" as what to do about it.
 */
export function inFormTerms(message: string): string {
  const m = /^(?:[\w.[\]]+\.)?(\w+): (.*)$/s.exec(message);
  const field = m?.[1] ?? "";
  const text = m && (field in FIELD_WORDS || /\[\d+\]/.test(message)) ? m[2]! : message;
  const inherit = /^required: tier (\S+) has no (\S+) limit for operation (\S+), scope (\S+) to inherit it from/.exec(text);
  if (inherit) {
    const [, tier, algorithm, operation, scope] = inherit;
    return `${FIELD_WORDS[field] ?? "This field"} needed: tier ${tier} has no ${algorithm.replaceAll("_", " ")} limit for ${operation} per ${scope.replace("_", " ")} to take it from. Enter it here (e.g. 1m), or pick an algorithm the tier has.`;
  }
  return text.replace(/^required\b/, "Enter a value:").replace(/^Enter a value:: /, "Enter a value: ");
}


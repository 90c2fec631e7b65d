/** The CLI's rendering of a policy plan: one line per change, then a summary. */
import { compileRateLimitService } from "../lib/policy/envoy/compile";
import { diffEnvoyServices } from "../lib/policy/envoy/describe";
import { joinFailureModes } from "../lib/policy/envoy/failure-modes";
import { changedFields, type PlanChange, type PlanRecords, type PolicyPlan } from "../lib/policy/plan";

/** `limit: 100 → 150, window: "1m" → "30s"`: the fields that differ. */
function changedValues(c: PlanChange): string {
  const value = (record: PlanChange["before"], field: string) => JSON.stringify((record as Record<string, unknown> | null)?.[field] ?? null);
  return changedFields(c).map((f) => `${f}: ${value(c.before, f)} → ${value(c.after, f)}`).join(", ");
}

/** A changed Envoy domain rule by rule (its document as JSON would be one unreadable line). */
function envoyDomainChanges(c: Extract<PlanChange, { entity: "envoyDomain" }>): string {
  const service = (r: PlanRecords["envoyDomain"] | null) =>
    r ? compileRateLimitService({ unknownDomain: "ok", shadowMode: false, domains: [joinFailureModes(r.document, r.failureModes)] }) : undefined;
  const lines = diffEnvoyServices(service(c.before), service(c.after)).map((l) => `    ${l.kind} ${l.text}`);
  const moved = c.before && c.after && c.before.position !== c.after.position ? [`    position ${c.before.position} → ${c.after.position}`] : [];
  return [...lines, ...moved].join("\n");
}

/** `+ limit free/export/tenant/token_bucket`, `~ tenant acme: tier: "free" → "pro"`, `- key acme/ci`. */
export function formatPlan(plan: PolicyPlan): string {
  const lines: string[] = [];
  for (const c of plan.created) lines.push(`+ ${c.entity} ${c.key}`);
  for (const c of plan.changed) lines.push(c.entity === "envoyDomain" ? `~ ${c.entity} ${c.key}:\n${envoyDomainChanges(c)}` : `~ ${c.entity} ${c.key}: ${changedValues(c)}`);
  for (const c of plan.deleted) lines.push(`- ${c.entity} ${c.key}`);
  for (const w of plan.warnings) lines.push(`! ${w}`);
  const summary = `${plan.created.length} to create, ${plan.changed.length} to change, ${plan.deleted.length} to delete`;
  return lines.length ? `${lines.join("\n")}\n${summary}` : `No changes. ${summary}`;
}

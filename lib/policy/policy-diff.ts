/**
 * What publishing the draft would change, or what a version changed against the one before it, in
 * words and values: limits, quotas, global caps, operations, tenants and their overrides, and the
 * rules of Envoy domains and the approval rule, added, changed or removed between two compiled
 * documents. Presentation only: it reads compiled documents (lib/policy/compiled.ts) and decides
 * nothing. The Policy page shows it; an approval request keeps it (the diff its requester saw).
 */
import type { ApprovalSettings } from "./approval";
import type { CompiledBilling } from "./billing-period";
import type { CompiledLimit, CompiledOverride, CompiledPolicyBody } from "./compiled";
import type { PlanChangeRule } from "./plan-change";
import { formatDurationMs } from "./duration";
import { diffEnvoyServices, type EnvoyChange } from "./envoy/describe";

export interface DiffLine {
  kind: "added" | "changed" | "removed";
  entity: "operation" | "tier" | "limit" | "quota" | "global cap" | "tenant" | "override" | "defaults" | "approval" | EnvoyChange["entity"];
  text: string;
}

function limitText(l: CompiledLimit): string {
  const w = l.algorithm === "concurrency" ? `${l.limit} in flight` : `${l.limit} per ${formatDurationMs(l.windowMs)}`;
  const extra = [
    l.burst !== l.limit && l.algorithm.endsWith("bucket") ? `burst ${l.burst}` : "",
    l.mode !== "reject" ? `mode ${l.mode}` : "",
    l.regions ? `regions ${l.regions}` : "",
  ].filter(Boolean).join(", ");
  return `${l.algorithm} ${w}${extra ? ` (${extra})` : ""}`;
}

function changes<T extends object>(before: T, after: T, fields: (keyof T)[]): string {
  return fields
    .filter((f) => JSON.stringify(before[f]) !== JSON.stringify(after[f]))
    .map((f) => `${String(f)} ${JSON.stringify(before[f])} → ${JSON.stringify(after[f])}`)
    .join(", ");
}

export function diffPolicies(live: CompiledPolicyBody | null, draft: CompiledPolicyBody): DiffLine[] {
  const out: DiffLine[] = [];
  const empty: CompiledPolicyBody = { schemaVersion: 1, defaults: draft.defaults, operations: {}, routes: [], tiers: {}, globalCaps: [], tenants: {} };
  const a = live ?? empty;

  if (live && live.defaults.failureMode !== draft.defaults.failureMode) {
    out.push({ kind: "changed", entity: "defaults", text: `Default failure mode ${live.defaults.failureMode} → ${draft.defaults.failureMode}` });
  }
  const rule = (d: CompiledPolicyBody) => d.defaults.planChange ?? "full";
  if (live && rule(live) !== rule(draft)) {
    out.push({ kind: "changed", entity: "defaults", text: `Plan changes mid-period ${rule(live)} → ${rule(draft)} (${PLAN_CHANGE_WORDS[rule(draft)]})` });
  }

  for (const name of new Set([...Object.keys(a.operations), ...Object.keys(draft.operations)])) {
    const x = a.operations[name];
    const y = draft.operations[name];
    if (!x && y) out.push({ kind: "added", entity: "operation", text: `Operation ${name} added, matching ${y.match.join(", ") || "(called by name)"}` });
    else if (x && !y) out.push({ kind: "removed", entity: "operation", text: `Operation ${name} removed` });
    else if (x && y) {
      const c = changes(x, y, ["match", "cost", "failureMode"]);
      if (c) out.push({ kind: "changed", entity: "operation", text: `Operation ${name}: ${c}` });
    }
  }

  for (const name of new Set([...Object.keys(a.tiers), ...Object.keys(draft.tiers)])) {
    const x = a.tiers[name];
    const y = draft.tiers[name];
    if (!x && y) out.push({ kind: "added", entity: "tier", text: `Tier ${name} added (weight ${y.weight}, ${y.limits.length} limit(s), ${y.quotas.length} quota(s))` });
    if (x && !y) {
      out.push({ kind: "removed", entity: "tier", text: `Tier ${name} removed` });
      continue;
    }
    if (!y) continue;
    if (x && x.weight !== y.weight) out.push({ kind: "changed", entity: "tier", text: `Tier ${name}: weight ${x.weight} → ${y.weight}` });
    if (x && thresholdText(x.thresholds) !== thresholdText(y.thresholds)) {
      out.push({ kind: "changed", entity: "tier", text: `Tier ${name}: notification thresholds ${thresholdText(x.thresholds)} → ${thresholdText(y.thresholds)}` });
    }
    const before = new Map((x?.limits ?? []).map((l) => [l.id, l]));
    const after = new Map(y.limits.map((l) => [l.id, l]));
    for (const [id, l] of after) {
      const old = before.get(id);
      const where = `${name}: ${l.operation} per ${l.scope}`;
      if (!old) out.push({ kind: "added", entity: "limit", text: `${where} — ${limitText(l)}` });
      else if (limitText(old) !== limitText(l) || JSON.stringify(old) !== JSON.stringify(l)) {
        out.push({ kind: "changed", entity: "limit", text: `${where} — ${limitText(old)} → ${limitText(l)}` });
      }
    }
    for (const [id, l] of before) if (!after.has(id)) out.push({ kind: "removed", entity: "limit", text: `${name}: ${l.operation} per ${l.scope} — ${limitText(l)}` });
    const qb = new Map((x?.quotas ?? []).map((q) => [q.id, q]));
    const qa = new Map(y.quotas.map((q) => [q.id, q]));
    for (const [id, q] of qa) {
      const old = qb.get(id);
      const what = `${name}: ${q.operation} quota per ${q.period}`;
      if (!old) out.push({ kind: "added", entity: "quota", text: `${what} — ${q.limit} (${q.overage})` });
      else if (old.limit !== q.limit || old.overage !== q.overage) out.push({ kind: "changed", entity: "quota", text: `${what} — ${old.limit} (${old.overage}) → ${q.limit} (${q.overage})` });
    }
    for (const [id, q] of qb) if (!qa.has(id)) out.push({ kind: "removed", entity: "quota", text: `${name}: ${q.operation} quota per ${q.period}` });
  }

  const cb = new Map(a.globalCaps.map((g) => [g.id, g]));
  const ca = new Map(draft.globalCaps.map((g) => [g.id, g]));
  for (const [id, g] of ca) {
    const old = cb.get(id);
    const what = `Global cap on ${g.operation} per ${formatDurationMs(g.windowMs)}`;
    // `regions` is shown when not `local` (the default): "50 (weighted, regions split)".
    const how = (c: typeof g) => `${c.limit} (${c.share}${c.regions ? `, regions ${c.regions}` : ""})`;
    if (!old) out.push({ kind: "added", entity: "global cap", text: `${what}: ${how(g)}` });
    else if (how(old) !== how(g)) out.push({ kind: "changed", entity: "global cap", text: `${what}: ${how(old)} → ${how(g)}` });
  }
  for (const [id, g] of cb) if (!ca.has(id)) out.push({ kind: "removed", entity: "global cap", text: `Global cap on ${g.operation} per ${formatDurationMs(g.windowMs)}` });

  for (const slug of new Set([...Object.keys(a.tenants), ...Object.keys(draft.tenants)])) {
    const x = a.tenants[slug];
    const y = draft.tenants[slug];
    if (!x && y) out.push({ kind: "added", entity: "tenant", text: `Tenant ${slug} added on tier ${y.tier}` });
    else if (x && !y) out.push({ kind: "removed", entity: "tenant", text: `Tenant ${slug} removed` });
    else if (x && y) {
      const parts: string[] = [];
      if (x.tier !== y.tier) parts.push(`tier ${x.tier} → ${y.tier}`);
      if (billingText(x.billing) !== billingText(y.billing)) parts.push(`billing ${billingText(x.billing)} → ${billingText(y.billing)}, a new period from publish`);
      if (thresholdText(x.thresholds) !== thresholdText(y.thresholds)) parts.push(`notification thresholds ${thresholdText(x.thresholds)} → ${thresholdText(y.thresholds)}`);
      if (x.status !== y.status) parts.push(`status ${x.status} → ${y.status}`);
      if (x.name !== y.name) parts.push(`name ${JSON.stringify(x.name)} → ${JSON.stringify(y.name)}`);
      if (parts.length) out.push({ kind: "changed", entity: "tenant", text: `Tenant ${slug}: ${parts.join(", ")}` });
      if (x.tier !== y.tier) {
        out.push({ kind: "changed", entity: "tenant", text: `Tenant ${slug}: quotas from publish to the period's end (${rule(draft)}): ${PLAN_CHANGE_WORDS[rule(draft)]}` });
      }
    }
    // Overrides by the cell they replace, with their values (not "overrides 0 → 1").
    const ob = new Map((x?.overrides ?? []).map((o) => [overrideCell(o), o]));
    const oa = new Map((y?.overrides ?? []).map((o) => [overrideCell(o), o]));
    if (!y) continue;
    for (const [cell, o] of oa) {
      const old = ob.get(cell);
      if (!old) out.push({ kind: "added", entity: "override", text: `Tenant ${slug}: override of ${cell} — ${overrideText(o)}` });
      else if (JSON.stringify(old) !== JSON.stringify(o)) out.push({ kind: "changed", entity: "override", text: `Tenant ${slug}: override of ${cell} — ${overrideText(old)} → ${overrideText(o)}` });
    }
    for (const [cell, o] of ob) if (!oa.has(cell)) out.push({ kind: "removed", entity: "override", text: `Tenant ${slug}: override of ${cell} — ${overrideText(o)}` });
  }
  out.push(...diffEnvoyServices(live?.rateLimitService, draft.rateLimitService));
  if (approvalText(live?.approval) !== approvalText(draft.approval)) {
    const kind = !live?.approval ? "added" : !draft.approval ? "removed" : "changed";
    out.push({ kind, entity: "approval", text: `Approval: ${approvalText(live?.approval)} → ${approvalText(draft.approval)}` });
  }
  return out;
}

/** What each plan-change rule does, in the words the diff shows before publish. */
export const PLAN_CHANGE_WORDS: Record<PlanChangeRule, string> = {
  full: "usage so far carried over, the new tier's full quota for the period",
  prorate: "usage so far kept, the new tier's quota scaled to the rest of the period",
};

function approvalText(a: ApprovalSettings | undefined): string {
  if (!a) return "none";
  return `a second person beyond ${a.beyondPercent}% of tenants${a.globalCapChange ? " or on any global cap change" : ""}${a.adminBypass ? ", admins exempt" : ""}`;
}

function billingText(b: CompiledBilling | undefined): string {
  return b ? `anchor ${b.anchor} (${b.timeZone})` : "UTC calendar month";
}

function thresholdText(t: number[] | undefined): string {
  return t ? t.map((p) => `${p}%`).join(", ") || "none" : "default (80%, 100%)";
}

function overrideCell(o: CompiledOverride): string {
  return o.kind === "limit" ? `${o.operation} per ${o.scope}` : `${o.operation} quota per ${o.period}`;
}

function overrideText(o: CompiledOverride): string {
  const until = o.expiresAtMs === null ? "" : ` until ${new Date(o.expiresAtMs).toISOString().replace(":00.000Z", "Z").replace("T", " ")}`;
  return (o.kind === "limit" ? limitText(o.limit) : `${o.quota.limit} (${o.quota.overage})`) + until;
}

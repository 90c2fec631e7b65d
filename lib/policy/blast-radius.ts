/**
 * The blast-radius rule of two-person approval (docs/control-plane.md#approval): whether a publish,
 * or a step of a guarded rollout, needs a second person under the `approval` block (./approval.ts).
 *
 * The rule that governs a change is the one of the live version, never the draft's: a draft that
 * drops or loosens `approval` is itself a change that the live rule judges, so nobody can publish
 * their way around it. A first `approval` block takes effect from the publish after the one that
 * makes it live.
 */
import type { ApprovalSettings } from "./approval";
import { canonicalJson } from "./checksum";
import type { CompiledPolicyBody } from "./compiled";

/** Who a change reaches: the tenants whose limits, quotas or status it changes. */
export interface BlastRadius {
  /** Slugs (of either version) whose answers can change. */
  affected: string[];
  /** Every tenant of either version: the denominator of the share. */
  of: number;
  globalCapsChanged: boolean;
  approvalChanged: boolean;
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/**
 * What separates `candidate` from `live` tenant by tenant. A change outside tenants and tiers
 * (defaults, operations, routes, global caps, Envoy domains) reaches every tenant; a tier's change
 * reaches the tenants on that tier; a tenant's own change (tier, overrides, status, billing) reaches
 * that tenant. `requirements` and `approval` decide nothing on the decision path: they reach nobody.
 */
export function blastRadius(live: CompiledPolicyBody | null, candidate: CompiledPolicyBody): BlastRadius {
  const slugs = [...new Set([...Object.keys(live?.tenants ?? {}), ...Object.keys(candidate.tenants)])].sort();
  const globalCapsChanged = !same(live?.globalCaps ?? [], candidate.globalCaps);
  const approvalChanged = !same(live?.approval, candidate.approval);
  const everyone =
    !live ||
    globalCapsChanged ||
    !same(live.defaults, candidate.defaults) ||
    !same(live.operations, candidate.operations) ||
    !same(live.routes, candidate.routes) ||
    !same(live.rateLimitService, candidate.rateLimitService);
  const affected = everyone
    ? slugs
    : slugs.filter((slug) => {
        const before = live.tenants[slug];
        const after = candidate.tenants[slug];
        if (!before || !after || !same(before, after)) return true;
        return !same(live.tiers[after.tier], candidate.tiers[after.tier]);
      });
  return { affected, of: slugs.length, globalCapsChanged, approvalChanged };
}

export interface ApprovalVerdict {
  required: boolean;
  /** Why, in sentences (empty when not required). */
  reasons: string[];
  /** The share of tenants the change reaches, in percent (0–100). */
  reachPercent: number;
  /** How many tenants it reaches, of how many. */
  reached: number;
  of: number;
}

/**
 * Whether a change needs a second person under `rule` (the live version's `approval`; undefined:
 * never). `cohort` limits the reach to a rollout step's tenants (null: everyone, a plain publish).
 * `adminCaller`: the caller acts as admin, which skips approval only when the rule says adminBypass.
 */
export function approvalVerdict(rule: ApprovalSettings | undefined, radius: BlastRadius, options: { cohort: ReadonlySet<string> | null; adminCaller: boolean }): ApprovalVerdict {
  const reached = options.cohort ? radius.affected.filter((slug) => options.cohort!.has(slug)).length : radius.affected.length;
  const reachPercent = radius.of === 0 ? 0 : (reached / radius.of) * 100;
  const verdict = { required: false, reasons: [] as string[], reachPercent, reached, of: radius.of };
  if (!rule || (rule.adminBypass && options.adminCaller)) return verdict;
  const reasons: string[] = [];
  if (reached > 0 && reachPercent > rule.beyondPercent) {
    reasons.push(`it reaches ${reached} of ${radius.of} tenants (${formatPercent(reachPercent)}), more than the ${formatPercent(rule.beyondPercent)} blast radius`);
  }
  if (rule.globalCapChange && radius.globalCapsChanged && (options.cohort === null || reached > 0)) reasons.push("it changes a global cap");
  if (radius.approvalChanged && (options.cohort === null || options.cohort.size >= radius.of)) reasons.push("it changes the approval rule itself");
  return { ...verdict, required: reasons.length > 0, reasons };
}

function formatPercent(p: number): string {
  return `${Number.isInteger(p) ? p : p.toFixed(1)}%`;
}

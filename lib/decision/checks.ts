/**
 * From a resolved request to the list of counters one decision checks (pure: no I/O, no clock).
 *
 * The selection (tier rows for the operation or `*`, live overrides, global caps) is
 * `limitsFor` in lib/policy/compile.ts; this file turns it into store checks with their keys.
 *
 * An operation that matches no pattern resolves to `*`: it is checked against the `*` rows, the
 * `*` quotas and nothing else (no global cap names `*`), and its failure mode is the default.
 *
 * Subjects per scope: `api_key` → the first 16 hex chars of sha256(key) (skipped when the caller
 * sent `tenant` instead of a key); `tenant` → `_`; `ip` → the address (skipped when none was
 * sent); `global` → `_` under the limit's own hash tag, shared by every tenant.
 */
import type { EffectiveLimits } from "../policy/compile";
import type { CompiledPolicyBody, CompiledTenant } from "../policy/compiled";
import { ANY_OPERATION } from "../policy/types";
import { counterKeys } from "../policy/counter-keys";
import type { LimitCheck } from "../store/types";
import { APPROXIMATE_ALGORITHMS } from "../policy/requirements";
import { isSampled } from "./accuracy";

export const KEY_SUBJECT_LENGTH = 16;

/** A check plus what the answer needs to describe it. */
export interface PlannedCheck {
  check: LimitCheck;
  /** The RateLimit-Policy item name. */
  name: string;
  scope: string;
  /** Window in seconds for RateLimit-Policy `w` (0: no window, e.g. concurrency). */
  windowSeconds: number;
}

export interface PlanInput {
  /** What limitsFor (lib/policy/compile.ts) selected for this tenant and operation. */
  effective: EffectiveLimits;
  /** sha256 hex of the API key, or null when the caller named the tenant. */
  keyHash: string | null;
  ip: string | null;
  /** The deployment's key prefix (`redisPrefix()` in lib/redis/keys.ts on the decision path). */
  prefix: string;
  /** The accuracy meter's sample (lib/decision/accuracy.ts); 0 or absent: off. */
  accuracySample?: number;
}

const PERIOD_SECONDS = { day: 86_400, month: 2_592_000 } as const;

export function planChecks(input: PlanInput): PlannedCheck[] {
  const { effective, keyHash, ip, prefix } = input;
  const sample = input.accuracySample ?? 0;
  const { tenant, tier } = effective;
  const out: PlannedCheck[] = [];
  for (const l of effective.limits) {
    let key: string;
    if (l.scope === "api_key") {
      if (keyHash === null) continue;
      key = counterKeys.counter(tenant.slug, l.id, keyHash.slice(0, KEY_SUBJECT_LENGTH), prefix);
    } else if (l.scope === "tenant") {
      key = counterKeys.counter(tenant.slug, l.id, "_", prefix);
    } else if (l.scope === "ip") {
      if (ip === null) continue;
      key = counterKeys.counter(tenant.slug, l.id, ip, prefix);
    } else {
      key = counterKeys.globalLimit(l.id, prefix);
    }
    const exactLog = sample > 0 && APPROXIMATE_ALGORITHMS.has(l.algorithm) && isSampled(key, sample);
    out.push({
      check: {
        ...(exactLog ? { exactLog } : {}),
        key,
        kind: l.scope === "global" ? "global" : "limit",
        algorithm: l.algorithm,
        limit: l.limit,
        windowMs: l.windowMs,
        burst: l.burst,
        precision: l.precision,
        mode: l.mode,
        maxDelayMs: l.maxDelayMs,
        leaseTtlMs: l.leaseTtlMs,
      },
      name: l.name,
      scope: l.scope,
      windowSeconds: l.algorithm === "concurrency" ? 0 : Math.ceil(l.windowMs / 1000),
    });
  }
  for (const q of effective.quotas) {
    out.push({
      check: {
        key: counterKeys.quota(tenant.slug, q.id, prefix),
        kind: "quota",
        algorithm: "quota",
        limit: q.limit,
        windowMs: 0,
        burst: q.limit,
        precision: 1,
        mode: "reject",
        maxDelayMs: 0,
        leaseTtlMs: 0,
        period: q.period,
        overage: q.overage,
      },
      name: `${tier.name}-${q.operation === ANY_OPERATION ? "" : `${q.operation}-`}${q.period}`,
      scope: "tenant",
      windowSeconds: PERIOD_SECONDS[q.period],
    });
  }
  for (const c of effective.globalCaps) {
    out.push({
      check: {
        key: counterKeys.globalCap(c.id, prefix),
        kind: "global",
        algorithm: "sliding_window_counter",
        limit: c.limit,
        windowMs: c.windowMs,
        burst: c.limit,
        precision: 1,
        mode: "reject",
        maxDelayMs: 0,
        leaseTtlMs: 0,
        ...(c.share === "weighted" ? { fairShare: { weight: tier.weight, member: tenant.slug } } : {}),
      },
      name: `global-${c.operation}`,
      scope: "global",
      windowSeconds: Math.ceil(c.windowMs / 1000),
    });
  }
  return out;
}

/**
 * Under failure mode `local` an API key that cannot be resolved (this server never looked it up,
 * and the store is unavailable) is counted as this tenant, whose slug no real tenant can have
 * (slugs start with a letter or digit). The in-process store is the only one that sees it.
 */
export const UNRESOLVED_TENANT = "~unresolved";

/**
 * The checks for a request whose key cannot be resolved, under failure mode `local` (issue #17,
 * defect 2: such requests used to pass unlimited). Its tenant, and so its tier, is unknown: it is
 * checked against every tier's rows for the operation at once, so the strictest one binds, and
 * against the operation's global caps. Per-key rows count the key itself, per-IP rows the address,
 * and tenant rows and quotas one counter shared by every unresolvable key (as UNRESOLVED_TENANT):
 * together, all the keys this server cannot resolve get at most one local share of the strictest
 * tenant limit, whoever they belong to. Overrides cannot apply (they need the tenant).
 */
export function planUnresolvedChecks(doc: CompiledPolicyBody, operation: string, keyHash: string | null, ip: string | null, prefix: string): PlannedCheck[] {
  const applies = (row: string) => row === ANY_OPERATION || row === operation;
  const tenant: CompiledTenant = { slug: UNRESOLVED_TENANT, name: UNRESOLVED_TENANT, tier: "", status: "active", overrides: [] };
  const globalCaps = doc.globalCaps.filter((c) => applies(c.operation));
  const byKey = new Map<string, PlannedCheck>();
  for (const tier of Object.values(doc.tiers)) {
    const effective: EffectiveLimits = {
      tenant: { ...tenant, tier: tier.name },
      tier,
      operation,
      limits: tier.limits.filter((l) => applies(l.operation)),
      quotas: tier.quotas.filter((q) => applies(q.operation)),
      globalCaps,
    };
    // One check per counter: a global cap is the same counter for every tier.
    for (const p of planChecks({ effective, keyHash, ip, prefix })) if (!byKey.has(p.check.key)) byKey.set(p.check.key, p);
  }
  return [...byKey.values()];
}

/** The same checks with every limit divided among `instances` decision servers (failure mode `local`). */
export function localShare(checks: readonly LimitCheck[], instances: number): LimitCheck[] {
  if (instances <= 1) return checks.map(({ exactLog: _sampled, ...c }) => c);
  const share = (n: number) => Math.max(1, Math.floor(n / instances));
  // The accuracy meter compares with Redis's exact log: a local decision has none.
  return checks.map(({ exactLog: _sampled, ...c }) => ({ ...c, limit: share(c.limit), burst: share(c.burst) }));
}

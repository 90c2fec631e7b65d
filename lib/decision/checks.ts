/**
 * What `limitsFor` (lib/policy/effective-limits.ts) selected, turned into the store checks of one
 * decision with their counter keys (pure: no I/O, no clock). Subjects per scope: `api_key` → the
 * first 16 hex chars of sha256(key) (skipped when the caller named the tenant); `tenant` → `_`;
 * `ip` → the address (skipped when none was sent); `global` → `_` under the limit's own hash tag.
 */
import type { EffectiveLimits } from "../policy/effective-limits";
import type { CompiledLimit, CompiledPolicyBody, CompiledTenant } from "../policy/compiled";
import { ANY_OPERATION } from "../policy/types";
import { counterKeys } from "../policy/counter-keys";
import { QUOTA_WINDOW_LAG_MS, quotaWindow, type QuotaWindow } from "../policy/quota-window";
import { checkSpec } from "../store/lua/wire";
import type { Complete, LimitCheck } from "../store/types";
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
  /** The RateLimit-Policy value at `check.limit`, built once per plan (policyHeaderOf); absent: built when answered. */
  policyHeader?: string;
}

export interface ChecksInput {
  /** What limitsFor (lib/policy/effective-limits.ts) selected for this tenant and operation. */
  effective: EffectiveLimits;
  /** sha256 hex of the API key, or null when the caller named the tenant. */
  keyHash: string | null;
  ip: string | null;
  /** The counter keys' prefix (SLUICE_REDIS_PREFIX on the decision server, IN_PROCESS in a simulation). */
  prefix: string;
  /** The accuracy meter's sample (lib/decision/accuracy.ts); 0 or absent: off. */
  accuracySample?: number;
  /** The store's clock as the caller estimates it (ms), for the tenant's quota periods; absent: the UTC calendar (the limit probe). */
  nowMs?: number;
}

const PERIOD_SECONDS = { day: 86_400, month: 2_592_000 } as const;

/** One row of a plan: its check without the subject, or the whole planned check when the subject is fixed. */
interface PlanRow extends Omit<PlannedCheck, "check"> {
  /** Where the subject comes from: the key's hash, the client address, or nowhere (fixed). */
  subject: "key" | "ip" | "fixed";
  /** The counter key up to its subject. */
  keyPrefix: string;
  /** The check with `key` still to fill in (subject rows). */
  base: LimitCheck;
  /** Subject rows: whether the accuracy meter may sample it (an approximate algorithm). */
  approximate: boolean;
  /** Subject rows: the limit string of a sampled subject's check (the base's carries the unsampled one). */
  sampledSpec: string | undefined;
  /** Fixed rows: the planned check itself, the same object for every decision. */
  fixed: PlannedCheck | null;
  policyHeader: string;
}

/** What planChecks builds once per (policy rows, tenant) and reuses for every decision. */
interface Plan {
  effective: Pick<EffectiveLimits, "quotas" | "globalCaps" | "tier" | "tenant">;
  prefix: string;
  sample: number;
  rows: PlanRow[];
  /**
   * The instants its quota windows hold for, [from, until): every quota's current period at `nowMs −
   * QUOTA_WINDOW_LAG_MS` (-∞, +∞ without quotas or a clock). Outside, the plan is built again.
   */
  windowFromMs: number;
  windowUntilMs: number;
  /** Whether it was planned with a clock (windows) or without (the UTC calendar). */
  timed: boolean;
}

// By the rows limitsFor selected (cached per policy document there), then tenant: a plan lives as long as its document.
const plans = new WeakMap<readonly CompiledLimit[], Map<string, Plan>>();

/** `"name";q=<limit>;w=<window s>` — the RateLimit-Policy value of a check (answer.ts). */
export function policyHeaderOf(name: string, limit: number, windowSeconds: number): string {
  return `${quoteName(name)};q=${limit}${windowSeconds > 0 ? `;w=${windowSeconds}` : ""}`;
}

/** A RateLimit-Policy item name as a structured-field string. */
export function quoteName(name: string): string {
  if (name.indexOf('"') === -1 && name.indexOf("\\") === -1) return `"${name}"`;
  return `"${name.replace(/[\\"]/g, "\\$&")}"`;
}

/**
 * A check with every field of LimitCheck present, in this order (the absent ones undefined; typed
 * Complete, so a new field must be carried here): checks of every kind then share one hidden class,
 * and the store and the engine read them through monomorphic lookups.
 */
function limitCheck(c: Complete<LimitCheck>): Complete<LimitCheck> {
  return {
    key: c.key, kind: c.kind, algorithm: c.algorithm, limit: c.limit, windowMs: c.windowMs, burst: c.burst, precision: c.precision, mode: c.mode,
    maxDelayMs: c.maxDelayMs, leaseTtlMs: c.leaseTtlMs,
    period: c.period, overage: c.overage, quotaWindow: c.quotaWindow, fairShare: c.fairShare, replicate: c.replicate, exactLog: c.exactLog, spec: c.spec,
  };
}

/** What a row of the policy makes of every check: all of LimitCheck but the counter key and what the plan adds per subject. */
type CheckBase = Complete<Omit<LimitCheck, "key" | "exactLog" | "spec">>;

function buildPlan(effective: EffectiveLimits, prefix: string, sample: number, nowMs: number | undefined): Plan {
  const { tenant, tier } = effective;
  const rows: PlanRow[] = [];
  let windowFromMs = -Infinity;
  let windowUntilMs = Infinity;
  const row = (subject: PlanRow["subject"], keyPrefix: string, base: CheckBase, name: string, scope: string, windowSeconds: number, approximate: boolean) => {
    // The limit string the Redis store sends, made here once for every decision (a concurrency
    // check's carries a fresh lease token each time: the store makes those).
    const withSpec = (c: LimitCheck): LimitCheck => (c.algorithm === "concurrency" ? c : { ...c, spec: checkSpec(c, "") });
    const check = withSpec(limitCheck({ key: keyPrefix, ...base, exactLog: undefined, spec: undefined }));
    const policyHeader = policyHeaderOf(name, base.limit, windowSeconds);
    let fixed: PlannedCheck | null = null;
    if (subject === "fixed") {
      const exactLog = sample > 0 && approximate && isSampled(keyPrefix, sample);
      fixed = { check: exactLog ? withSpec({ ...check, exactLog }) : check, name, scope, windowSeconds, policyHeader };
    }
    const sampledSpec = check.spec === undefined ? undefined : withSpec({ ...check, exactLog: true }).spec;
    rows.push({ subject, keyPrefix, base: check, approximate, sampledSpec, fixed, name, scope, windowSeconds, policyHeader });
  };
  for (const l of effective.limits) {
    const base: CheckBase = {
      kind: l.scope === "global" ? "global" : "limit", algorithm: l.algorithm, limit: l.limit, windowMs: l.windowMs, burst: l.burst, precision: l.precision, mode: l.mode,
      maxDelayMs: l.maxDelayMs, leaseTtlMs: l.leaseTtlMs,
      period: undefined, overage: undefined, quotaWindow: undefined, fairShare: undefined, replicate: l.regions === "shared" ? true : undefined,
    };
    const windowSeconds = l.algorithm === "concurrency" ? 0 : Math.ceil(l.windowMs / 1000);
    const approximate = APPROXIMATE_ALGORITHMS.has(l.algorithm);
    if (l.scope === "api_key") row("key", counterKeys.counter(tenant.slug, l.id, "", prefix), base, l.name, l.scope, windowSeconds, approximate);
    else if (l.scope === "tenant") row("fixed", counterKeys.counter(tenant.slug, l.id, "_", prefix), base, l.name, l.scope, windowSeconds, approximate);
    else if (l.scope === "ip") row("ip", counterKeys.counter(tenant.slug, l.id, "", prefix), base, l.name, l.scope, windowSeconds, approximate);
    else row("fixed", counterKeys.globalLimit(l.id, prefix), base, l.name, l.scope, windowSeconds, approximate);
  }
  for (const q of effective.quotas) {
    const name = `${tier.name}-${q.operation === ANY_OPERATION ? "" : `${q.operation}-`}${q.period}`;
    const window = nowMs === undefined ? undefined : quotaWindow(nowMs, q, tenant);
    if (window) {
      windowFromMs = Math.max(windowFromMs, window.current.startMs + QUOTA_WINDOW_LAG_MS);
      windowUntilMs = Math.min(windowUntilMs, window.current.endMs + QUOTA_WINDOW_LAG_MS);
    }
    const base: CheckBase = {
      kind: "quota", algorithm: "quota", limit: q.limit, windowMs: 0, burst: q.limit, precision: 1, mode: "reject",
      maxDelayMs: 0, leaseTtlMs: 0,
      period: q.period, overage: q.overage, quotaWindow: window, fairShare: undefined, replicate: undefined,
    };
    row("fixed", counterKeys.quota(tenant.slug, q.id, prefix), base, name, "tenant", PERIOD_SECONDS[q.period], false);
  }
  for (const c of effective.globalCaps) {
    const base: CheckBase = {
      kind: "global", algorithm: "sliding_window_counter", limit: c.limit, windowMs: c.windowMs, burst: c.limit, precision: 1, mode: "reject",
      maxDelayMs: 0, leaseTtlMs: 0,
      period: undefined, overage: undefined, quotaWindow: undefined,
      fairShare: c.share === "weighted" ? { weight: tier.weight, member: tenant.slug } : undefined, replicate: c.regions === "shared" ? true : undefined,
    };
    row("fixed", counterKeys.globalCap(c.id, prefix), base, `global-${c.operation}`, "global", Math.ceil(c.windowMs / 1000), false);
  }
  return { effective, prefix, sample, rows, windowFromMs, windowUntilMs, timed: nowMs !== undefined };
}

/** The plan for these rows and tenant: remembered, rebuilt when anything it was built from changed. */
function planFor(effective: EffectiveLimits, sample: number, prefix: string, nowMs: number | undefined): Plan {
  let byTenant = plans.get(effective.limits);
  if (byTenant === undefined) plans.set(effective.limits, (byTenant = new Map()));
  const known = byTenant.get(effective.tenant.slug);
  if (
    known !== undefined &&
    known.prefix === prefix &&
    known.sample === sample &&
    known.effective.quotas === effective.quotas &&
    known.effective.globalCaps === effective.globalCaps &&
    known.effective.tier === effective.tier &&
    // Its quotas' windows still hold this instant (two comparisons per decision).
    (nowMs === undefined ? !known.timed : known.timed && nowMs >= known.windowFromMs && nowMs < known.windowUntilMs)
  ) {
    return known;
  }
  const plan = buildPlan(effective, prefix, sample, nowMs);
  byTenant.set(effective.tenant.slug, plan);
  return plan;
}

/**
 * The checks of one decision (limits, quotas, global caps), from a plan made once per policy rows and
 * tenant: a decision only adds its subjects to the counter keys, and checks whose subject is fixed
 * are the same objects every time (callers never mutate them).
 */
export function planChecks(input: ChecksInput): PlannedCheck[] {
  const { effective, keyHash, ip } = input;
  const sample = input.accuracySample ?? 0;
  const plan = planFor(effective, sample, input.prefix, input.nowMs);
  const out: PlannedCheck[] = [];
  const keySubject = keyHash === null ? null : keyHash.slice(0, KEY_SUBJECT_LENGTH);
  for (const r of plan.rows) {
    if (r.fixed !== null) {
      out.push(r.fixed);
      continue;
    }
    const subject = r.subject === "key" ? keySubject : ip;
    if (subject === null) continue;
    const key = r.keyPrefix + subject;
    const check: LimitCheck = sample > 0 && r.approximate && isSampled(key, sample) ? { ...r.base, exactLog: true, key, spec: r.sampledSpec } : { ...r.base, key };
    out.push({ check, name: r.name, scope: r.scope, windowSeconds: r.windowSeconds, policyHeader: r.policyHeader });
  }
  return out;
}

/** The tenant of a key that cannot be resolved under failure mode `local` (no real slug starts with `~`). */
export const UNRESOLVED_TENANT = "~unresolved";

/**
 * The checks, under failure mode `local`, for a request whose key cannot be resolved: against every
 * tier's rows for the operation at once (the strictest binds) and its global caps. Tenant rows and
 * quotas count UNRESOLVED_TENANT, so all the keys this server cannot resolve together get at most
 * one local share of the strictest tenant limit. Overrides cannot apply (they need the tenant).
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
  // The accuracy meter compares with Redis's exact log: a local decision has none (and the limit
  // string made for the store no longer describes a check whose numbers change).
  if (instances <= 1) return checks.map(({ exactLog: _sampled, spec: _spec, ...c }) => c);
  const share = (n: number) => Math.max(1, Math.floor(n / instances));
  const shareWindow = (w: QuotaWindow | undefined): QuotaWindow | undefined =>
    w && { current: { ...w.current, limit: share(w.current.limit) }, next: { ...w.next, limit: share(w.next.limit) } };
  return checks.map(({ exactLog: _sampled, spec: _spec, ...c }) => ({ ...c, limit: share(c.limit), burst: share(c.burst), quotaWindow: shareWindow(c.quotaWindow) }));
}

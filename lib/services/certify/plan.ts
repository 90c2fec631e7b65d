/**
 * What `sluice certify` certifies, and the policy document it serves an ephemeral decision server
 * (pure: no I/O).
 *
 * A *cell* is one limit of one tier (or a tier's quota, or a global cap) of the version. Each
 * scenario runs a cell alone, on a subject of its own: a synthetic tier holding only that limit,
 * a synthetic tenant on it with its own key (and client address for ip limits), so no other limit
 * of the version can deny first and no two scenarios share a counter.
 *
 * Time-compressed: a window longer than CERT_WINDOW_MS is certified at CERT_WINDOW_MS, and a limit
 * above CERT_LIMIT at CERT_LIMIT (bursts and delays scaled with them), so every scenario of every
 * cell fits in the time budget. The algorithms are the same at any scale (they are integer
 * arithmetic on windows and counts); the report says which cells were scaled, from what to what.
 */
import { limitId, quotaId, globalCapId, finalizePolicy } from "../../policy/compile";
import type {
  CompiledGlobalCap,
  CompiledLimit,
  CompiledOperation,
  CompiledPolicy,
  CompiledPolicyBody,
  CompiledQuota,
  CompiledTenant,
  CompiledTier,
} from "../../policy/compiled";
import { COMPILED_SCHEMA_VERSION } from "../../policy/compiled";
import { formatDurationMs } from "../../policy/duration";
import { compileRoutes } from "../../policy/match";
import {
  heldToExactLog,
  requirementsForLimit,
  requirementsForOperation,
  type LimitRequirements,
} from "../../policy/requirements";
import { ANY_OPERATION, type FailureMode } from "../../policy/types";

export const CERT_WINDOW_MS = 2_000;
export const CERT_LIMIT = 50;
/** The operation a `*` row's requests name: no pattern matches it, so only `*` rows apply. */
export const UNMATCHED_OPERATION = "GET /__sluice_certify/unmatched";

export const SCENARIOS = ["boundary", "edge", "under", "over", "instances", "retry", "p95", "drill"] as const;
export type Scenario = (typeof SCENARIOS)[number];

export type CellKind = "window" | "bucket" | "concurrency" | "quota" | "cap";

export interface Subject {
  tenant: string;
  tier: string;
  key: string;
  ip: string;
  /** What the request names as its operation. */
  operation: string;
  /** The limit's name in this subject's tier (metric label, RateLimit-Policy item). */
  limitName: string;
}

export interface Cell {
  id: string;
  kind: CellKind;
  /** How the report names it: `free-api_key`, `free quota * month`, `global export`. */
  label: string;
  tier: string;
  operation: string;
  algorithm: string;
  mode: "reject" | "delay" | "shadow";
  /** As served for certification (scaled). */
  limit: CompiledLimit | null;
  quota: CompiledQuota | null;
  cap: CompiledGlobalCap | null;
  cost: number;
  scaled: { from: string; to: string } | null;
  requirements: LimitRequirements;
  failureMode: FailureMode;
  subjects: Partial<Record<Scenario, Subject>>;
}

export interface CertificationPlan {
  version: number;
  cells: Cell[];
  /** Every operation of the version, plus `*` (requests matching none): failure mode and p95 are per operation. */
  operations: { name: string; request: string; failureMode: FailureMode; rejectP95: ReturnType<typeof requirementsForOperation> }[];
  /** The document an ephemeral decision server serves (version = the certified one's). */
  doc: CompiledPolicy;
  /** sha256(key) is not computed here: the runner indexes `keys` (plaintext → tenant). */
  keys: { key: string; tenant: string }[];
}

function scenariosOf(kind: CellKind, mode: Cell["mode"], algorithm: string, req?: LimitRequirements, burst?: number): Scenario[] {
  const s: Scenario[] = ["boundary"];
  if (kind === "window" || kind === "cap") s.push("edge");
  if ((kind === "window" || kind === "bucket") && mode !== "shadow") s.push("retry");
  // A bucket of 1 or 2 cannot absorb the jitter of requests sent over a network: a denial there
  // would say nothing about the algorithm.
  if ((kind === "window" || (kind === "bucket" && (burst ?? 0) >= 3)) && mode !== "shadow") s.push("under");
  // Admissions against an exact log; a shadow limit admits everything, so only enforced ones.
  if (req && kind === "window" && mode !== "shadow" && heldToExactLog(algorithm, req.boundaryBurst.value)) s.push("over");
  if (mode === "reject" || kind === "concurrency" || kind === "quota" || kind === "cap") s.push("instances");
  if (kind === "quota") s.push("retry");
  if (mode !== "shadow") s.push("p95", "drill");
  return s;
}

const limitName = (tier: string, operation: string, scope: string) => (operation === ANY_OPERATION ? `${tier}-${scope}` : `${tier}-${operation}-${scope}`);

/** A limit at certification scale, and what was changed. */
function scaleLimit(l: CompiledLimit): { limit: Omit<CompiledLimit, "id" | "name">; scaled: Cell["scaled"] } {
  const windowMs = l.algorithm === "concurrency" ? 0 : Math.min(l.windowMs, CERT_WINDOW_MS);
  // What one burst can admit (a bucket's burst, plus what delay mode lets wait) fits one batch of requests.
  const bucket = l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket";
  const delayed = l.mode === "delay" && l.windowMs > 0 ? (l.maxDelayMs * l.limit) / l.windowMs : 0;
  const factor = Math.min(1, CERT_LIMIT / Math.max(l.limit, (bucket ? l.burst : 0) + delayed));
  const limit = Math.max(1, Math.floor(l.limit * factor));
  const burst = Math.max(1, Math.floor(l.burst * factor));
  const timeFactor = l.windowMs > 0 ? windowMs / l.windowMs : 1;
  const scaled: Omit<CompiledLimit, "id" | "name"> = {
    ...l,
    limit,
    burst,
    windowMs,
    maxDelayMs: Math.round(l.maxDelayMs * timeFactor),
    leaseTtlMs: l.algorithm === "concurrency" ? Math.min(l.leaseTtlMs, 60_000) : 0,
  };
  const changed = limit !== l.limit || windowMs !== l.windowMs || burst !== l.burst;
  const describe = (x: { limit: number; windowMs: number; burst: number }) =>
    `${x.limit}${x.windowMs > 0 ? ` per ${formatDurationMs(x.windowMs)}` : " in flight"}${x.burst !== x.limit ? `, burst ${x.burst}` : ""}`;
  return { limit: scaled, scaled: changed ? { from: describe(l), to: describe(scaled) } : null };
}

function kindOf(algorithm: string): CellKind {
  if (algorithm === "token_bucket" || algorithm === "leaky_bucket") return "bucket";
  if (algorithm === "concurrency") return "concurrency";
  return "window";
}

/** Builds the plan for one version; `makeKey` gives each subject a fresh key (the runner's randomness). */
export function planCertification(source: CompiledPolicy, makeKey: (subject: string) => string): CertificationPlan {
  const operations: Record<string, CompiledOperation> = {};
  for (const op of Object.values(source.operations)) operations[op.name] = { ...op, match: [...op.match] };
  const tiers: Record<string, CompiledTier> = {};
  const tenants: Record<string, CompiledTenant> = {};
  const keys: { key: string; tenant: string }[] = [];
  const cells: Cell[] = [];
  let ipCounter = 0;
  const failureModeOf = (op: string) => (op === ANY_OPERATION ? source.defaults.failureMode : (source.operations[op]?.failureMode ?? source.defaults.failureMode));
  const request = (op: string) => (op === ANY_OPERATION ? UNMATCHED_OPERATION : op);

  const addSubject = (cell: Cell, scenario: Scenario, build: (tierName: string) => { tier: CompiledTier; limitName: string; operation: string }) => {
    const tierName = `${cell.id}-${scenario}`;
    const { tier, limitName: name, operation } = build(tierName);
    tiers[tierName] = tier;
    const slug = `cert-${tierName}`;
    tenants[slug] = { slug, name: `Certification ${cell.label} (${scenario})`, tier: tierName, status: "active", overrides: [] };
    const key = makeKey(slug);
    keys.push({ key, tenant: slug });
    ipCounter++;
    cell.subjects[scenario] = { tenant: slug, tier: tierName, key, ip: `198.18.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`, operation, limitName: name };
  };

  let n = 0;
  for (const tier of Object.values(source.tiers)) {
    for (const l of tier.limits) {
      const { limit, scaled } = scaleLimit(l);
      const cell: Cell = {
        id: `c${++n}`,
        kind: kindOf(l.algorithm),
        label: l.name,
        tier: tier.name,
        operation: l.operation,
        algorithm: l.algorithm,
        mode: l.mode,
        limit: { ...limit, id: "", name: "" },
        quota: null,
        cap: null,
        cost: l.operation === ANY_OPERATION ? 1 : (source.operations[l.operation]?.cost ?? 1),
        scaled,
        requirements: requirementsForLimit(source.requirements, { ...l, tier: tier.name }),
        failureMode: failureModeOf(l.operation),
        subjects: {},
      };
      for (const scenario of scenariosOf(cell.kind, cell.mode, cell.algorithm, cell.requirements, limit.burst)) {
        addSubject(cell, scenario, (tierName) => {
          const served: CompiledLimit = { ...limit, id: limitId(tierName, l.operation, l.scope, l.algorithm), name: limitName(tierName, l.operation, l.scope) };
          return { tier: { name: tierName, weight: tier.weight, limits: [served], quotas: [] }, limitName: served.name, operation: request(l.operation) };
        });
      }
      cells.push(cell);
    }
    for (const q of tier.quotas) {
      const limit = Math.min(q.limit, CERT_LIMIT);
      const served = { ...q, limit };
      const cell: Cell = {
        id: `c${++n}`,
        kind: "quota",
        label: `${tier.name} quota ${q.operation} per ${q.period}`,
        tier: tier.name,
        operation: q.operation,
        algorithm: "quota",
        mode: "reject",
        limit: null,
        quota: served,
        cap: null,
        cost: q.operation === ANY_OPERATION ? 1 : (source.operations[q.operation]?.cost ?? 1),
        scaled: limit !== q.limit ? { from: `${q.limit} per ${q.period}`, to: `${limit} per ${q.period}` } : null,
        requirements: requirementsForLimit(source.requirements, { tier: tier.name, operation: q.operation, scope: "tenant", algorithm: "fixed_window" }),
        failureMode: failureModeOf(q.operation),
        subjects: {},
      };
      const scenarios = q.overage === "bill" ? (["boundary"] as Scenario[]) : scenariosOf("quota", "reject", "quota");
      for (const scenario of scenarios) {
        addSubject(cell, scenario, (tierName) => {
          const quota: CompiledQuota = { ...served, id: quotaId(tierName, q.operation, q.period) };
          const name = `${tierName}-${q.operation === ANY_OPERATION ? "" : `${q.operation}-`}${q.period}`;
          return { tier: { name: tierName, weight: tier.weight, limits: [], quotas: [quota] }, limitName: name, operation: request(q.operation) };
        });
      }
      cells.push(cell);
    }
  }
  const caps: CompiledGlobalCap[] = [];
  source.globalCaps.forEach((c) => {
    const windowMs = Math.min(c.windowMs, CERT_WINDOW_MS);
    const limit = Math.min(c.limit, CERT_LIMIT);
    const original = c.operation === ANY_OPERATION ? undefined : source.operations[c.operation];
    const cell: Cell = {
      id: `c${++n}`,
      kind: "cap",
      label: `global-${c.operation}`,
      tier: "(all tiers)",
      operation: c.operation,
      algorithm: c.share === "weighted" ? "fair_share" : "global_cap",
      mode: "reject",
      limit: null,
      quota: null,
      cap: { ...c, windowMs, limit },
      cost: original?.cost ?? 1,
      scaled: windowMs !== c.windowMs || limit !== c.limit ? { from: `${c.limit} per ${formatDurationMs(c.windowMs)}`, to: `${limit} per ${formatDurationMs(windowMs)}` } : null,
      requirements: requirementsForLimit(source.requirements, { tier: "", operation: c.operation, scope: "global", algorithm: "fixed_window" }),
      failureMode: failureModeOf(c.operation),
      subjects: {},
    };
    for (const scenario of scenariosOf("cap", "reject", cell.algorithm)) {
      addSubject(cell, scenario, (tierName) => {
        // A cap counts every tenant's requests of its operation: each scenario gets an operation of its own.
        const op = `${tierName}-op`;
        operations[op] = { name: op, cost: cell.cost, failureMode: cell.failureMode, match: [`POST /__sluice_certify/${tierName}`] };
        caps.push({ ...cell.cap!, operation: op, id: globalCapId(op, windowMs) });
        return { tier: { name: tierName, weight: 1, limits: [], quotas: [] }, limitName: `global-${op}`, operation: op };
      });
    }
    cells.push(cell);
  });

  const body: CompiledPolicyBody = {
    schemaVersion: COMPILED_SCHEMA_VERSION,
    defaults: { ...source.defaults },
    operations,
    routes: compileRoutes(Object.values(operations)),
    tiers,
    globalCaps: caps,
    tenants,
  };
  const ops = [...Object.keys(source.operations), ANY_OPERATION].map((name) => ({
    name,
    request: request(name),
    failureMode: failureModeOf(name),
    rejectP95: requirementsForOperation(source.requirements, name),
  }));
  return { version: source.version, cells, operations: ops, doc: finalizePolicy(body, source.version, source.createdAt), keys };
}

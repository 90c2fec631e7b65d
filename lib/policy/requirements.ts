/**
 * The policy file's optional `requirements` block: what `sluice certify` must prove about the
 * published policy, and the tolerance the live accuracy meter alerts on. Pure; validated with the
 * rest of the file (errors name their path, `requirements.operations[0].failureMode: …`).
 *
 * ```yaml
 * requirements:
 *   accuracy: 5%              # admissions within 5% of an exact sliding-window log (default 5%)
 *   boundaryBurst: allowed    # a burst across a window edge is acceptable (default allowed)
 *   rejectP95: 50ms           # p95 latency of denied decisions (default 50ms)
 *   operations:               # per operation ("*": every operation)
 *     - { operation: export, failureMode: closed, boundaryBurst: forbidden }
 *   limits:                   # per limit cell of a tier (algorithm optional)
 *     - { tier: free, operation: "*", scope: api_key, accuracy: 2% }
 * ```
 *
 * Resolution for one limit: its `limits` entry, else the strictest of the `operations` entries
 * that cover it (an operation's entry covers that operation's rows and the `*` rows, which also
 * decide that operation's requests), else the top-level values, else the defaults below. The
 * strictest: the smallest tolerance, `forbidden` over `allowed`, the smallest p95.
 */
import { z } from "zod";
import { parseDurationMs } from "./duration";
import { ALGORITHMS, ANY_OPERATION, FAILURE_MODES, SCOPES, type Algorithm, type FailureMode, type Scope } from "./types";

export const DEFAULT_ACCURACY_TOLERANCE = 0.05;
export const DEFAULT_REJECT_P95_MS = 50;
export const BOUNDARY_BURSTS = ["allowed", "forbidden"] as const;
export type BoundaryBurst = (typeof BOUNDARY_BURSTS)[number];

const PERCENT = /^(\d{1,3}(?:\.\d{1,3})?)%$/;

/** `5%` → 0.05; a number in [0, 100] followed by `%`. */
export function parsePercent(text: string): number | null {
  const m = PERCENT.exec(text.trim());
  if (!m) return null;
  const value = Number(m[1]);
  return value <= 100 ? Math.round(value * 1000) / 100_000 : null;
}

export function formatPercent(fraction: number): string {
  return `${Math.round(fraction * 100_000) / 1000}%`;
}

const percent = z.string().superRefine((value, ctx) => {
  if (parsePercent(value) === null) ctx.addIssue({ code: "custom", message: `expected a percentage like 5%, got ${JSON.stringify(value)}` });
});
const p95 = z.string().superRefine((value, ctx) => {
  const ms = parseDurationMs(value);
  if (ms === null) ctx.addIssue({ code: "custom", message: `expected a duration like 50ms, got ${JSON.stringify(value)}` });
  else if (ms > 60_000) ctx.addIssue({ code: "custom", message: "expected at most 1m" });
});
const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const operationRef = z.union([z.literal(ANY_OPERATION), z.string().regex(NAME, "expected an operation name or *")]);

const common = {
  accuracy: percent.optional(),
  boundaryBurst: z.enum(BOUNDARY_BURSTS).optional(),
};

export const requirementsSchema = z.strictObject({
  ...common,
  rejectP95: p95.optional(),
  operations: z
    .array(z.strictObject({ operation: operationRef, ...common, rejectP95: p95.optional(), failureMode: z.enum(FAILURE_MODES).optional() }))
    .max(1000)
    .default([]),
  limits: z
    .array(
      z.strictObject({
        tier: z.string().regex(NAME, "expected a tier name"),
        operation: operationRef,
        scope: z.enum(SCOPES),
        algorithm: z.enum(ALGORITHMS).optional(),
        ...common,
      }),
    )
    .max(1000)
    .default([]),
});

export type RequirementsSpec = z.output<typeof requirementsSchema>;

/** What the compiled document carries: the block with its values parsed (fractions, ms). */
export interface CompiledRequirements {
  accuracy?: number;
  boundaryBurst?: BoundaryBurst;
  rejectP95Ms?: number;
  operations: { operation: string; accuracy?: number; boundaryBurst?: BoundaryBurst; rejectP95Ms?: number; failureMode?: FailureMode }[];
  limits: { tier: string; operation: string; scope: Scope; algorithm?: Algorithm; accuracy?: number; boundaryBurst?: BoundaryBurst }[];
}

/** Drops undefined members, so the compiled document (and its checksum) never carries them. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

const pct = (s: string | undefined) => (s === undefined ? undefined : parsePercent(s)!);
const dur = (s: string | undefined) => (s === undefined ? undefined : parseDurationMs(s)!);

export function compileRequirements(spec: RequirementsSpec): CompiledRequirements {
  return {
    ...defined({ accuracy: pct(spec.accuracy), boundaryBurst: spec.boundaryBurst, rejectP95Ms: dur(spec.rejectP95) }),
    operations: spec.operations.map((o) =>
      defined({ operation: o.operation, accuracy: pct(o.accuracy), boundaryBurst: o.boundaryBurst, rejectP95Ms: dur(o.rejectP95), failureMode: o.failureMode }),
    ),
    limits: spec.limits.map((l) =>
      defined({ tier: l.tier, operation: l.operation, scope: l.scope, algorithm: l.algorithm, accuracy: pct(l.accuracy), boundaryBurst: l.boundaryBurst }),
    ),
  };
}

/** Where a resolved value came from, in the file's notation (`requirements.operations[0]`, `default`). */
export type RequirementSource = string;

export interface Resolved<T> {
  value: T;
  source: RequirementSource;
}

export interface LimitRequirements {
  accuracy: Resolved<number>;
  boundaryBurst: Resolved<BoundaryBurst>;
}

export interface OperationRequirements {
  rejectP95Ms: Resolved<number>;
  /** null: no failure mode is required (the declared one is certified as declared). */
  failureMode: Resolved<FailureMode> | null;
}

type OperationEntry = CompiledRequirements["operations"][number];

/** An operation's own entry with `field` set, else the `*` entry with it. */
function entryFor<K extends keyof OperationEntry>(req: CompiledRequirements, operation: string, field: K) {
  const withField = req.operations.map((o, i) => ({ o, i })).filter(({ o }) => o[field] !== undefined);
  return (operation === ANY_OPERATION ? undefined : withField.find(({ o }) => o.operation === operation)) ?? withField.find(({ o }) => o.operation === ANY_OPERATION);
}

/**
 * The operation entries that decide one field for a limit row: for a named operation, its entry
 * (else the `*` entry); a `*` row decides every operation's requests, so every entry, of which the
 * caller keeps the strictest.
 */
function entriesFor<K extends keyof OperationEntry>(req: CompiledRequirements, rowOperation: string, field: K) {
  if (rowOperation === ANY_OPERATION) return req.operations.map((o, i) => ({ o, i })).filter(({ o }) => o[field] !== undefined);
  const one = entryFor(req, rowOperation, field);
  return one ? [one] : [];
}

/** The requirements one limit cell of a tier must meet. */
export function requirementsForLimit(
  req: CompiledRequirements | undefined,
  limit: { tier: string; operation: string; scope: Scope; algorithm: Algorithm },
): LimitRequirements {
  let accuracy: Resolved<number> = req?.accuracy !== undefined
    ? { value: req.accuracy, source: "requirements.accuracy" }
    : { value: DEFAULT_ACCURACY_TOLERANCE, source: "default" };
  let boundaryBurst: Resolved<BoundaryBurst> = req?.boundaryBurst !== undefined
    ? { value: req.boundaryBurst, source: "requirements.boundaryBurst" }
    : { value: "allowed", source: "default" };
  if (!req) return { accuracy, boundaryBurst };
  const tightest = entriesFor(req, limit.operation, "accuracy").sort((a, b) => a.o.accuracy! - b.o.accuracy!)[0];
  if (tightest) accuracy = { value: tightest.o.accuracy!, source: `requirements.operations[${tightest.i}]` };
  const bursts = entriesFor(req, limit.operation, "boundaryBurst");
  const burst = bursts.find(({ o }) => o.boundaryBurst === "forbidden") ?? bursts[0];
  if (burst) boundaryBurst = { value: burst.o.boundaryBurst!, source: `requirements.operations[${burst.i}]` };
  const i = req.limits.findIndex(
    (l) => l.tier === limit.tier && l.operation === limit.operation && l.scope === limit.scope && (l.algorithm === undefined || l.algorithm === limit.algorithm),
  );
  if (i >= 0) {
    const l = req.limits[i];
    if (l.accuracy !== undefined) accuracy = { value: l.accuracy, source: `requirements.limits[${i}]` };
    if (l.boundaryBurst !== undefined) boundaryBurst = { value: l.boundaryBurst, source: `requirements.limits[${i}]` };
  }
  return { accuracy, boundaryBurst };
}

/** The requirements the requests of one operation must meet: its own entry, else the `*` entry, else the top level. */
export function requirementsForOperation(req: CompiledRequirements | undefined, operation: string): OperationRequirements {
  let rejectP95Ms: Resolved<number> = req?.rejectP95Ms !== undefined
    ? { value: req.rejectP95Ms, source: "requirements.rejectP95" }
    : { value: DEFAULT_REJECT_P95_MS, source: "default" };
  let failureMode: Resolved<FailureMode> | null = null;
  if (!req) return { rejectP95Ms, failureMode };
  const p95Entry = entryFor(req, operation, "rejectP95Ms");
  if (p95Entry) rejectP95Ms = { value: p95Entry.o.rejectP95Ms!, source: `requirements.operations[${p95Entry.i}]` };
  const modeEntry = entryFor(req, operation, "failureMode");
  if (modeEntry) failureMode = { value: modeEntry.o.failureMode!, source: `requirements.operations[${modeEntry.i}]` };
  return { rejectP95Ms, failureMode };
}

/**
 * Algorithms that approximate an exact sliding-window log of `limit` per `window`: the sliding
 * window counter (an estimate) and the fixed window (a log whose window resets at its edge). The
 * accuracy meter samples their subjects and certification compares them with an exact log.
 */
export const APPROXIMATE_ALGORITHMS: ReadonlySet<string> = new Set<Algorithm>(["sliding_window_counter", "fixed_window"]);

/**
 * Whether a limit is held to the accuracy tolerance against an exact log: the sliding window
 * counter always (it is an estimate of one); a fixed window only when its boundary burst is
 * forbidden — otherwise the burst it admits at each edge (up to 2×) is what the policy accepted,
 * and its difference from a log is that burst, not an error.
 */
export function heldToExactLog(algorithm: string, boundaryBurst: BoundaryBurst): boolean {
  return algorithm === "sliding_window_counter" || (algorithm === "fixed_window" && boundaryBurst === "forbidden");
}

/** Every limit held to an exact log, with its accuracy tolerance (for the meter's gauge and alert). */
export function accuracyTolerances(doc: {
  tiers: Record<string, { name: string; limits: { name: string; operation: string; scope: Scope; algorithm: Algorithm }[] }>;
  requirements?: CompiledRequirements;
}): { tier: string; limit: string; tolerance: number }[] {
  const out: { tier: string; limit: string; tolerance: number }[] = [];
  for (const tier of Object.values(doc.tiers)) {
    for (const l of tier.limits) {
      if (!APPROXIMATE_ALGORITHMS.has(l.algorithm)) continue;
      const req = requirementsForLimit(doc.requirements, { ...l, tier: tier.name });
      if (!heldToExactLog(l.algorithm, req.boundaryBurst.value)) continue;
      out.push({ tier: tier.name, limit: l.name, tolerance: req.accuracy.value });
    }
  }
  return out;
}

type Issue = { path: (string | number)[]; message: string };

/**
 * Cross-references of the block against the rest of the file: operations and tiers it names must
 * exist, a `limits` entry must name a limit of that tier, and no entry may repeat another.
 */
export function checkRequirementRefs(
  spec: RequirementsSpec,
  file: { operations: { name: string }[]; tiers: { name: string; limits: { operation: string; scope: string; algorithm: string }[] }[] },
): Issue[] {
  const issues: Issue[] = [];
  const operations = new Set(file.operations.map((o) => o.name));
  const seenOps = new Set<string>();
  spec.operations.forEach((o, i) => {
    if (o.operation !== ANY_OPERATION && !operations.has(o.operation)) {
      issues.push({ path: ["requirements", "operations", i, "operation"], message: `unknown operation ${JSON.stringify(o.operation)}` });
    }
    if (seenOps.has(o.operation)) issues.push({ path: ["requirements", "operations", i, "operation"], message: `duplicate operation ${JSON.stringify(o.operation)}` });
    seenOps.add(o.operation);
  });
  const seenLimits = new Set<string>();
  spec.limits.forEach((l, i) => {
    const path = ["requirements", "limits", i];
    const tier = file.tiers.find((t) => t.name === l.tier);
    if (!tier) {
      issues.push({ path: [...path, "tier"], message: `unknown tier ${JSON.stringify(l.tier)}` });
      return;
    }
    const match = tier.limits.some((x) => x.operation === l.operation && x.scope === l.scope && (l.algorithm === undefined || x.algorithm === l.algorithm));
    if (!match) {
      issues.push({
        path,
        message: `tier ${l.tier} has no limit for operation ${l.operation}, scope ${l.scope}${l.algorithm ? `, algorithm ${l.algorithm}` : ""}`,
      });
    }
    const key = `${l.tier}|${l.operation}|${l.scope}|${l.algorithm ?? ""}`;
    if (seenLimits.has(key)) issues.push({ path, message: "duplicate limit entry" });
    seenLimits.add(key);
  });
  return issues;
}

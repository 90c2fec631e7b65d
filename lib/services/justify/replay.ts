/**
 * Replay of recorded traffic through a policy version (docs/proving.md):
 * the per-minute, per-key usage the decision servers recorded, sent again, request by request,
 * through the engine's own pure core (lib/decision/decide.ts: plan → outcome → answer) over the
 * in-process store (the pure twins of the Redis scripts), on a simulated clock. Run once with the live
 * version and once with the draft, it predicts what the draft changes: 429 share per tier and
 * tenant, tenants and keys newly limited or freed.
 *
 * What the record cannot tell, and how it is modelled:
 * - **arrival times inside a minute**: the record has counts per minute. A subject's n requests of
 *   one operation in a minute are spread evenly over it (at (i + ½) · 60 s / n), and the minute's
 *   subjects interleave by those times. Real traffic is burstier, so for limits with windows of a
 *   minute or less the replay is a lower bound on 429s; a burst inside a minute it cannot see.
 * - **operations per key**: key rows count a key's decisions over all operations; the tenant's
 *   rows count per operation. A key's requests are split over operations in the proportions of its
 *   tenant's operations in that minute (largest remainder, so counts stay whole).
 * - **client addresses** are not recorded: `ip` limits are not replayed.
 * - **concurrency** depends on how long requests take: not replayed.
 * - **quotas** span a calendar month: they are projected from month-to-date use
 *   (lib/services/justify/replay-quotas.ts), not replayed.
 * - denied requests are replayed as demand (a client that retried after a 429 is counted again).
 */
import type { PlannedCheck } from "../../decision/checks";
import { decideWith } from "../../decision/decide";
import { IN_PROCESS } from "../../policy/counter-keys";
import type { CompiledPolicyBody } from "../../policy/compiled";
import { createMemoryStore } from "../../store/memory";

export const MINUTE_MS = 60_000;
/** Requests replayed at most per side; past it the oldest minutes are left out (and the result says so). */
export const DEFAULT_REPLAY_BUDGET = 1_000_000;

/** One subject's requests of one operation in one bucket (a minute, as recorded). */
export interface UsageCell {
  bucketStartMs: number;
  tenant: string;
  /** The key's 12-hex prefix, or `_` for calls that named the tenant instead of a key. */
  keyPrefix: string;
  operation: string;
  count: number;
}

/** Tenant rows (per operation) and key rows (all operations) of one bucket, as the rollups hold them. */
export interface RecordedBucket {
  bucketStartMs: number;
  tenantOperations: { tenant: string; operation: string; count: number }[];
  keys: { tenant: string; keyPrefix: string; count: number }[];
}

/**
 * Cells from the rollup rows: each key's count split over its tenant's operations in proportion
 * (largest remainder). A tenant whose rows count more than its keys did (a key row may be missing)
 * gets the rest under `_`.
 */
export function cellsFromRecorded(buckets: readonly RecordedBucket[]): UsageCell[] {
  const cells: UsageCell[] = [];
  for (const b of buckets) {
    const opsByTenant = groupBy(b.tenantOperations.filter((r) => r.count > 0), (r) => r.tenant);
    const keysByTenant = groupBy(b.keys.filter((k) => k.count > 0), (k) => k.tenant);
    for (const [tenant, ops] of opsByTenant) {
      const total = ops.reduce((s, o) => s + o.count, 0);
      const keys = [...(keysByTenant.get(tenant) ?? [])].sort((x, y) => x.keyPrefix.localeCompare(y.keyPrefix));
      const keyed = keys.reduce((s, k) => s + k.count, 0);
      if (keyed < total) keys.push({ tenant, keyPrefix: "_", count: total - keyed });
      for (const k of keys) {
        for (const [operation, count] of splitProportionally(k.count, ops)) {
          if (count > 0) cells.push({ bucketStartMs: b.bucketStartMs, tenant, keyPrefix: k.keyPrefix, operation, count });
        }
      }
    }
  }
  return cells;
}

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/** `total` split over `parts` by their counts, whole numbers summing to `total` (largest remainder). */
export function splitProportionally(total: number, parts: readonly { operation: string; count: number }[]): [string, number][] {
  const sum = parts.reduce((s, p) => s + p.count, 0);
  if (sum === 0) return [];
  const shares = parts.map((p) => {
    const exact = (total * p.count) / sum;
    return { operation: p.operation, whole: Math.floor(exact), rest: exact - Math.floor(exact) };
  });
  let left = total - shares.reduce((s, x) => s + x.whole, 0);
  for (const s of [...shares].sort((a, b) => b.rest - a.rest || a.operation.localeCompare(b.operation))) {
    if (left <= 0) break;
    s.whole++;
    left--;
  }
  return shares.map((s) => [s.operation, s.whole]);
}

export interface Tally {
  requests: number;
  /** Answered 429 (rate limits and caps; quotas are projected separately). */
  limited: number;
  shadowDenied: number;
}

export interface ReplayResult {
  version: number | null;
  requests: number;
  /** First replayed bucket (later than asked when the budget cut older ones off). */
  fromMs: number;
  toMs: number;
  truncated: boolean;
  tiers: Record<string, Tally>;
  tenants: Record<string, Tally & { tier: string }>;
  /** `<tenant>/<keyPrefix>` → tally. */
  keys: Record<string, Tally>;
  /** Admitted requests per tenant and operation (for the quota projection). */
  admitted: Record<string, Record<string, number>>;
  /** Recorded subjects the version does not know (a tenant added or removed since). */
  unknownTenants: string[];
  /** What was not replayed, in words, when it mattered. */
  notes: string[];
}

const empty = (): Tally => ({ requests: 0, limited: 0, shadowDenied: 0 });

/**
 * Replays `cells` through `doc`. `bucketMs` is the recording's granularity (a minute in
 * production; the tests that drive a real decision server use seconds).
 */
export async function replayUsage(
  doc: CompiledPolicyBody & { version?: number },
  cells: readonly UsageCell[],
  options: { budget?: number; bucketMs?: number } = {},
): Promise<ReplayResult> {
  const bucketMs = options.bucketMs ?? MINUTE_MS;
  const budget = options.budget ?? DEFAULT_REPLAY_BUDGET;
  const byBucket = new Map<number, UsageCell[]>();
  for (const c of cells) {
    const list = byBucket.get(c.bucketStartMs);
    if (list) list.push(c);
    else byBucket.set(c.bucketStartMs, [c]);
  }
  const buckets = [...byBucket.keys()].sort((a, b) => a - b);
  // Newest first within the budget: the most recent traffic is the best guess of tomorrow's.
  let total = 0;
  let first = buckets.length;
  while (first > 0) {
    const n = byBucket.get(buckets[first - 1]!)!.reduce((s, c) => s + c.count, 0);
    if (total + n > budget && first < buckets.length) break;
    total += n;
    first--;
  }
  const result: ReplayResult = {
    version: doc.version ?? null,
    requests: 0,
    fromMs: buckets[first] ?? 0,
    toMs: buckets.length > 0 ? buckets[buckets.length - 1]! + bucketMs : 0,
    truncated: first > 0,
    tiers: {},
    tenants: {},
    keys: {},
    admitted: {},
    unknownTenants: [],
    notes: [],
  };
  let nowMs = 0;
  const store = createMemoryStore({ clock: () => nowMs });
  const unknown = new Set<string>();
  let skippedIp = false;
  let skippedConcurrency = false;
  // Quotas are projected, not replayed; concurrency depends on how long requests took.
  const replayable = (p: PlannedCheck) => p.check.kind !== "quota" && p.check.algorithm !== "concurrency";
  for (let b = first; b < buckets.length; b++) {
    const start = buckets[b]!;
    const bucketCells = byBucket.get(start)!;
    const arrivals: { atMs: number; cell: UsageCell }[] = [];
    for (const cell of bucketCells) {
      for (let i = 0; i < cell.count; i++) arrivals.push({ atMs: start + Math.floor(((i + 0.5) * bucketMs) / cell.count), cell });
    }
    arrivals.sort((x, y) => x.atMs - y.atMs);
    for (const { atMs, cell } of arrivals) {
      nowMs = atMs;
      const { answer, effective } = await decideWith(
        store,
        {
          doc,
          policyVersion: doc.version ?? 0,
          tenant: cell.tenant,
          operation: cell.operation,
          keyHash: cell.keyPrefix === "_" ? null : cell.keyPrefix.padEnd(64, "0"),
          ip: null,
          nowMs,
          prefix: IN_PROCESS,
          dryRun: false,
          explain: false,
          keep: replayable,
        },
        doc.operations[cell.operation]?.cost ?? 1,
      );
      if (!effective) {
        unknown.add(cell.tenant);
        continue;
      }
      if (effective.tenant.status === "suspended") continue;
      if (effective.limits.some((l) => l.algorithm === "concurrency")) skippedConcurrency = true;
      if (effective.limits.some((l) => l.scope === "ip")) skippedIp = true;
      const tier = (result.tiers[effective.tier.name] ??= empty());
      const tenant = (result.tenants[cell.tenant] ??= { ...empty(), tier: effective.tier.name });
      const key = (result.keys[`${cell.tenant}/${cell.keyPrefix}`] ??= empty());
      result.requests++;
      for (const t of [tier, tenant, key]) {
        t.requests++;
        if (answer.status === 429) t.limited++;
        if (answer.shadowDenied) t.shadowDenied++;
      }
      if (answer.allowed) {
        const ops = (result.admitted[cell.tenant] ??= {});
        ops[cell.operation] = (ops[cell.operation] ?? 0) + 1;
      }
    }
    // Give the event loop a turn between buckets: a long replay must not starve the server.
    if (b % 60 === 59) await new Promise((r) => setImmediate(r));
  }
  await store.close();
  result.unknownTenants = [...unknown].sort();
  if (skippedIp) result.notes.push("Limits on client addresses (scope ip) are not replayed: addresses are not recorded.");
  if (skippedConcurrency) result.notes.push("Concurrency limits are not replayed: they depend on how long each request takes.");
  if (result.truncated) result.notes.push(`Only the most recent traffic fits the replay budget of ${budget.toLocaleString("en-US")} requests.`);
  return result;
}

export interface ReplayChange {
  subject: string;
  tier: string;
  requests: number;
  liveLimited: number;
  draftLimited: number;
}

export interface ReplayComparison {
  tiers: { tier: string; requests: number; liveShare: number; draftShare: number }[];
  tenants: (ReplayChange & { liveShare: number; draftShare: number })[];
  newlyLimitedTenants: ReplayChange[];
  freedTenants: ReplayChange[];
  newlyLimitedKeys: ReplayChange[];
  freedKeys: ReplayChange[];
}

const share = (t: Tally | undefined) => (t && t.requests > 0 ? t.limited / t.requests : 0);

/** What the draft changes against the live version, on the same replayed traffic. */
export function compareReplays(live: ReplayResult, draft: ReplayResult): ReplayComparison {
  const tiers = [...new Set([...Object.keys(live.tiers), ...Object.keys(draft.tiers)])].sort().map((tier) => ({
    tier,
    requests: Math.max(live.tiers[tier]?.requests ?? 0, draft.tiers[tier]?.requests ?? 0),
    liveShare: share(live.tiers[tier]),
    draftShare: share(draft.tiers[tier]),
  }));
  const change = (subject: string, tier: string, l: Tally | undefined, d: Tally | undefined): ReplayChange => ({
    subject,
    tier,
    requests: Math.max(l?.requests ?? 0, d?.requests ?? 0),
    liveLimited: l?.limited ?? 0,
    draftLimited: d?.limited ?? 0,
  });
  const tenantNames = [...new Set([...Object.keys(live.tenants), ...Object.keys(draft.tenants)])].sort();
  const tenants = tenantNames.map((t) => ({
    ...change(t, draft.tenants[t]?.tier ?? live.tenants[t]?.tier ?? "", live.tenants[t], draft.tenants[t]),
    liveShare: share(live.tenants[t]),
    draftShare: share(draft.tenants[t]),
  }));
  const keyNames = [...new Set([...Object.keys(live.keys), ...Object.keys(draft.keys)])].sort();
  const keys = keyNames.map((k) => change(k, draft.tenants[k.split("/")[0]!]?.tier ?? live.tenants[k.split("/")[0]!]?.tier ?? "", live.keys[k], draft.keys[k]));
  const byImpact = (a: ReplayChange, b: ReplayChange) => Math.abs(b.draftLimited - b.liveLimited) - Math.abs(a.draftLimited - a.liveLimited) || a.subject.localeCompare(b.subject);
  return {
    tiers,
    tenants,
    newlyLimitedTenants: tenants.filter((t) => t.liveLimited === 0 && t.draftLimited > 0).sort(byImpact),
    freedTenants: tenants.filter((t) => t.liveLimited > 0 && t.draftLimited === 0).sort(byImpact),
    newlyLimitedKeys: keys.filter((k) => k.liveLimited === 0 && k.draftLimited > 0).sort(byImpact),
    freedKeys: keys.filter((k) => k.liveLimited > 0 && k.draftLimited === 0).sort(byImpact),
  };
}

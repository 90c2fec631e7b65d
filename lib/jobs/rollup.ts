/**
 * The rollup job: drains closed minutes of the decision servers' usage hashes (lib/redis/usage-format.ts)
 * into Postgres **exactly once**, even when the worker is killed (SIGKILL) between any two steps.
 *
 * Per minute m, the steps are:
 *  1. CLAIM (one Lua script, atomic): if `usage:claimed` exists (a previous run died after claiming),
 *     return it with its claim token; else store a fresh random token in `usage:seq` and RENAME the
 *     minute's hash to `usage:claimed`.
 *     A decision server writing late to minute m after this creates a fresh hash: it is claimed in a
 *     later round with a new token, so late usage is never mixed into (or deleted with) this slice.
 *  2. COMMIT (one Postgres transaction): if RollupCursor `usage:<m>:<token>` exists, skip; else insert
 *     the slice's rows (minute, hour and day buckets, added to existing counts), the quota usage (used,
 *     denied for any reason, and quotaDenied from the `q|` fields), the billing adjustments of closed
 *     periods, AND the cursor. All or nothing.
 *  3. RELEASE (Lua): DEL `usage:claimed` only if `usage:seq` still holds our token (a slower worker
 *     must never delete a newer claim). Then SREM m from the set of minutes when no new hash exists.
 *
 * A crash before 2 commits repeats 2 with the same slice; a crash after repeats only 3, because
 * the cursor says the slice is in. Nothing is lost, nothing is counted twice.
 *
 * Rows (UsageRollup), with pseudo-tenants so the dashboards read pre-aggregated series:
 *  - tenant rows: (tenant, tier, operation, outcome, keyPrefix '') per minute/hour/day;
 *  - key rows: (tenant, operation '', outcome allowed|denied, keyPrefix) per minute/hour/day;
 *  - tier totals: tenant `*:<tier>`, (operation, outcome) per minute/hour/day;
 *  - system rows: tenant '' — operation `latency:allowed|latency:denied` with outcome = bucket
 *    index, operation `error` with outcome redis_error|redis_timeout|breaker_open, and (the
 *    accuracy meter) operation `accuracy:<limit>` of its tier with outcome sampled|limit|exact,
 *    and the 429s by the limit that denied them, operation `limit:<tenant>|<operation>|<limit>`
 *    with outcome denied (one decision counts for one limit: a tenant's rows sum to its 429s), and
 *    one API key's denials by reason, operation `keyreason:<tenant>|<keyPrefix>|<reason>`.
 * Hours and days are maintained in the same transaction as the minute, so downsampling only has to
 * delete old minute rows (lib/jobs/downsample.ts) and every granularity is always exact.
 */
import { randomUUID } from "node:crypto";
import type { Db, Tx } from "../db/client";
import { DENIAL_REASON_PREFIX } from "../db/denial-repo";
import { KEY_REASON_PREFIX } from "../db/key-usage-repo";
import { keys, redisPrefix } from "../redis/keys";
import { USAGE_OUTCOMES, type RedisLike } from "../redis/usage";
import { parseUsageHash, type UsageMinute } from "../redis/usage-format";
import { tryJobLock } from "./lock";
import { effectiveQuotas, PolicyHistory, quotaCovers, quotaRowsOf, type PolicyQuotaDoc, type QuotaDef } from "../db/quota-defs";

export const MINUTE_MS = 60_000;
/** Operation prefix of the system rows that count 429s by limit (lib/services/observe/tenant-usage.ts reads them). */
export const LIMIT_DENIAL_PREFIX = "limit:";
/** A minute is drained once it ended this long ago (decision servers flush every second). */
export const DRAIN_GRACE_MS = 5_000;
const CLAIM_TTL_SECONDS = 30 * 86_400;

const CLAIM_SCRIPT = `
if redis.call('EXISTS', KEYS[2]) == 1 then
  local seq = redis.call('GET', KEYS[3])
  if not seq then seq = '0' end
  return {seq, redis.call('HGETALL', KEYS[2])}
end
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local seq = ARGV[2]
redis.call('SET', KEYS[3], seq, 'EX', ARGV[1])
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return {seq, redis.call('HGETALL', KEYS[2])}
`;

const RELEASE_SCRIPT = `
local seq = redis.call('GET', KEYS[2])
if seq == ARGV[1] or (not seq and ARGV[1] == '0') then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

export interface RollupDeps {
  db: Db;
  redis: RedisLike;
  /** Redis key prefix (default SLUICE_REDIS_PREFIX). */
  prefix?: string;
  /** Test hook: called between steps with the step's name; a crash test kills the process here. */
  onStep?: (step: "claimed" | "committed" | "released", minuteStartMs: number) => void | Promise<void>;
}

export interface ClaimedSlice {
  minuteStartMs: number;
  seq: string;
  hash: Record<string, string>;
}

export type DrainOutcome = "drained" | "already_drained" | "empty" | "locked";

function fieldsToRecord(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

export async function claimMinute(redis: RedisLike, minuteStartMs: number, p: string): Promise<ClaimedSlice | null> {
  const result = (await redis.eval(
    CLAIM_SCRIPT,
    3,
    keys.usageMinute(minuteStartMs, p),
    keys.usageClaimed(minuteStartMs, p),
    keys.usageClaimSeq(minuteStartMs, p),
    String(CLAIM_TTL_SECONDS),
    randomUUID(),
  )) as [string, unknown] | null;
  if (!result) return null;
  return { minuteStartMs, seq: String(result[0]), hash: fieldsToRecord(result[1]) };
}

async function releaseMinute(redis: RedisLike, slice: ClaimedSlice, p: string): Promise<void> {
  await redis.eval(RELEASE_SCRIPT, 2, keys.usageClaimed(slice.minuteStartMs, p), keys.usageClaimSeq(slice.minuteStartMs, p), slice.seq);
}

export function sliceKey(minuteStartMs: number, seq: string): string {
  return `usage:${minuteStartMs}:${seq}`;
}

interface RollupRow {
  granularity: "minute" | "hour" | "day";
  bucketStart: Date;
  tenant: string;
  tier: string;
  operation: string;
  outcome: string;
  keyPrefix: string;
  count: bigint;
}

export function bucketStartMs(granularity: "minute" | "hour" | "day", ms: number): number {
  const size = granularity === "minute" ? MINUTE_MS : granularity === "hour" ? 3_600_000 : 86_400_000;
  return Math.floor(ms / size) * size;
}

/** Every UsageRollup row one minute produces (tenant, key, tier-total and system rows × 3 granularities). */
export function rollupRows(usage: UsageMinute): RollupRow[] {
  const rows = new Map<string, RollupRow>();
  const add = (tenant: string, tier: string, operation: string, outcome: string, keyPrefix: string, count: number) => {
    if (count <= 0) return;
    for (const granularity of ["minute", "hour", "day"] as const) {
      const start = bucketStartMs(granularity, usage.minuteStartMs);
      const id = `${granularity}|${start}|${tenant}|${operation}|${outcome}|${keyPrefix}`;
      const row = rows.get(id);
      if (row) {
        row.count += BigInt(count);
        row.tier = tier;
      } else {
        rows.set(id, { granularity, bucketStart: new Date(start), tenant, tier, operation, outcome, keyPrefix, count: BigInt(count) });
      }
    }
  };
  const tierOf = new Map<string, string>();
  for (const d of usage.decisions) {
    tierOf.set(d.tenant, d.tier);
    add(d.tenant, d.tier, d.operation, d.outcome, "", d.count);
    add(`*:${d.tier}`, d.tier, d.operation, d.outcome, "", d.count);
  }
  for (const k of usage.keys) add(k.tenant, tierOf.get(k.tenant) ?? "", "", k.outcome, k.keyPrefix || "_", k.count);
  for (const path of ["allowed", "denied"] as const) {
    usage.latency[path].forEach((c, i) => add("", "", `latency:${path}`, String(i), "", c));
  }
  for (const [kind, c] of Object.entries(usage.errors)) add("", "", "error", kind, "", c);
  for (const a of usage.accuracy) add("", a.tier, `accuracy:${a.limit}`, a.what, "", a.count);
  // 429s by the limit that denied them: system rows, so no tenant or key series counts them twice.
  for (const r of usage.limitDenials) add("", r.tier, `${LIMIT_DENIAL_PREFIX}${r.tenant}|${r.operation}|${r.limit}`, "denied", "", r.count);
  // Denials by the answer's reason (401, 403, 429, 503 told apart): system rows too.
  for (const r of usage.denialReasons ?? []) add("", r.tier, `${DENIAL_REASON_PREFIX}${r.tenant}|${r.reason}`, "denied", "", r.count);
  // One API key's denials by reason (a key's own page): system rows as well.
  for (const r of usage.keyDenialReasons ?? []) add("", tierOf.get(r.tenant) ?? "", `${KEY_REASON_PREFIX}${r.tenant}|${r.keyPrefix}|${r.reason}`, "denied", "", r.count);
  return [...rows.values()];
}

/** Adds `rows` to UsageRollup (counts summed on conflict). Exported for the e2e specs that seed recorded usage. */
export async function insertRollupRows(tx: Tx, rows: RollupRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 5_000) {
    const chunk = rows.slice(i, i + 5_000);
    await tx.$executeRawUnsafe(
      `INSERT INTO "UsageRollup" ("granularity","bucketStart","tenant","tier","operation","outcome","keyPrefix","count")
       SELECT * FROM unnest($1::text[], $2::timestamp(3)[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
       ON CONFLICT ("granularity","bucketStart","tenant","operation","outcome","keyPrefix")
       DO UPDATE SET "count" = "UsageRollup"."count" + EXCLUDED."count", "tier" = EXCLUDED."tier"`,
      chunk.map((r) => r.granularity),
      chunk.map((r) => r.bucketStart.toISOString().replace("T", " ").replace("Z", "")),
      chunk.map((r) => r.tenant),
      chunk.map((r) => r.tier),
      chunk.map((r) => r.operation),
      chunk.map((r) => r.outcome),
      chunk.map((r) => r.keyPrefix),
      chunk.map((r) => r.count.toString()),
    );
  }
}

interface QuotaDelta {
  tenant: string;
  quotaId: string;
  period: string;
  /**
   * The billing month (`YYYY-MM`) whose export holds the row: the UTC month of a UTC row; for the row
   * of a tenant's own month period (a `…@<zone>` label) the month of its last local day
   * (lib/policy/billing-month.ts); "" for rows no export adjusts (own day periods, `#own` shares).
   */
  month: string;
  /** The tenant period an adjustment of `month` is of: the own row's label; "" for a UTC row. */
  periodLabel: string;
  used: bigint;
  /** Decisions denied for any reason on the operations the quota covers. */
  denied: bigint;
  /** Decisions denied by this quota (the minute's `q|` fields). */
  quotaDenied: bigint;
}

/** The definition of quota `id` in a policy document: the tenant's own (override) first, then any tier's. */
function quotaInDoc(doc: PolicyQuotaDoc, tenant: string, id: string, atMs: number): QuotaDef | undefined {
  const own = effectiveQuotas(doc, tenant, null, atMs).find((q) => q.id === id);
  if (own) return own;
  for (const tier of Object.values(doc.tiers)) {
    const q = tier.quotas.find((x) => x.id === id);
    if (q) return q;
  }
  for (const t of Object.values(doc.tenants)) {
    for (const o of t.overrides) if (o.kind === "quota" && "quota" in o && (o.quota as QuotaDef).id === id) return o.quota as QuotaDef;
  }
  return undefined;
}

/**
 * Quota consumption of one minute: passed decisions (allowed, shadow-denied, degraded) count as used,
 * in units (each decision's cost, as the store counts them; docs/observability-and-billing.md);
 * denied ones as `denied` on every quota covering their operation; the `q|` fields as `quotaDenied`
 * on the quota that denied them.
 */
export async function quotaDeltas(usage: UsageMinute, policies: PolicyHistory): Promise<QuotaDelta[]> {
  const policy = await policies.at(usage.minuteStartMs + MINUTE_MS - 1);
  if (!policy) return [];
  const deltas = new Map<string, QuotaDelta>();
  // Quotas count units (a decision's cost), as the store does: count + the row's extra units.
  const extra = new Map<string, number>();
  for (const x of usage.extraUnits ?? []) {
    const k = `${x.tenant}|${x.tier}|${x.operation}|${x.outcome}`;
    extra.set(k, (extra.get(k) ?? 0) + x.units);
  }
  for (const d of usage.decisions) {
    if (d.tenant === "_" || d.count <= 0) continue;
    const units = d.outcome === "denied" ? d.count : d.count + (extra.get(`${d.tenant}|${d.tier}|${d.operation}|${d.outcome}`) ?? 0);
    const quotas = effectiveQuotas(policy.doc, d.tenant, d.tier, usage.minuteStartMs).filter((q) => quotaCovers(q, d.operation));
    for (const q of quotas) {
      for (const row of quotaRowsOf(policy.doc, d.tenant, q.period, usage.minuteStartMs)) {
        const id = `${d.tenant}|${q.id}|${row.period}`;
        const delta = deltas.get(id) ?? { tenant: d.tenant, quotaId: q.id, ...row, used: 0n, denied: 0n, quotaDenied: 0n };
        if (d.outcome === "denied") delta.denied += BigInt(d.count);
        else delta.used += BigInt(units);
        deltas.set(id, delta);
      }
    }
  }
  for (const qd of usage.quotaDenials) {
    if (qd.tenant === "_" || qd.count <= 0) continue;
    // The quota's period (day or month) comes from its definition: in the policy live at this
    // minute, else in any published version (a quota removed within the minute), newest first.
    let def = quotaInDoc(policy.doc, qd.tenant, qd.quotaId, usage.minuteStartMs);
    if (!def) for (const v of await policies.load()) if ((def = quotaInDoc(v.doc, qd.tenant, qd.quotaId, usage.minuteStartMs))) break;
    for (const row of quotaRowsOf(policy.doc, qd.tenant, def?.period ?? "month", usage.minuteStartMs)) {
      const id = `${qd.tenant}|${qd.quotaId}|${row.period}`;
      const delta = deltas.get(id) ?? { tenant: qd.tenant, quotaId: qd.quotaId, ...row, used: 0n, denied: 0n, quotaDenied: 0n };
      delta.quotaDenied += BigInt(qd.count);
      deltas.set(id, delta);
    }
  }
  return [...deltas.values()].sort((a, b) => (a.tenant + a.quotaId + a.period).localeCompare(b.tenant + b.quotaId + b.period));
}

async function applyQuotaDeltas(tx: Tx, deltas: QuotaDelta[], slice: string): Promise<void> {
  if (deltas.length === 0) return;
  await tx.$executeRawUnsafe(
    `INSERT INTO "QuotaUsage" ("tenant","quotaId","period","used","denied","quotaDenied","updatedAt")
     SELECT t, q, p, u, d, qd, now() FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[]) AS x(t, q, p, u, d, qd)
     ON CONFLICT ("tenant","quotaId","period")
     DO UPDATE SET "used" = "QuotaUsage"."used" + EXCLUDED."used", "denied" = "QuotaUsage"."denied" + EXCLUDED."denied",
                   "quotaDenied" = "QuotaUsage"."quotaDenied" + EXCLUDED."quotaDenied", "updatedAt" = now()`,
    deltas.map((d) => d.tenant),
    deltas.map((d) => d.quotaId),
    deltas.map((d) => d.period),
    deltas.map((d) => d.used.toString()),
    deltas.map((d) => d.denied.toString()),
    deltas.map((d) => d.quotaDenied.toString()),
  );
  // Usage of a month that is already closed: recorded as an adjustment of that month (its own line
  // in the next export), in the same transaction, so it is neither lost nor counted twice.
  const months = [...new Set(deltas.map((d) => d.month))].filter((m) => m !== "").sort();
  // The UTC months get their period row; a tenant period's month (maybe the next one) is only
  // checked: a month that has not started is never a row.
  const utcMonths = new Set(deltas.filter((d) => d.periodLabel === "").map((d) => d.month));
  for (const month of months) {
    if (utcMonths.has(month)) {
      await tx.$executeRawUnsafe(
        `INSERT INTO "BillingPeriod" ("period","status","revision","updatedAt") VALUES ($1, 'open', 0, now()) ON CONFLICT ("period") DO NOTHING`,
        month,
      );
    }
    const [period] = await tx.$queryRawUnsafe<{ status: string; revision: number }[]>(
      `SELECT "status", "revision" FROM "BillingPeriod" WHERE "period" = $1 FOR UPDATE`,
      month,
    );
    if (period?.status !== "closed") continue;
    const revision = period.revision + 1;
    const late = deltas.filter((d) => d.month === month);
    await tx.$executeRawUnsafe(
      `INSERT INTO "BillingAdjustment" ("period","tenant","quotaId","used","denied","quotaDenied","revision","sliceKey","periodLabel","recordedAt")
       SELECT $1, t, q, u, d, qd, $2, $3, pl, now() FROM unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[]) AS x(t, q, u, d, qd, pl)`,
      month,
      revision,
      slice,
      late.map((d) => d.tenant),
      late.map((d) => d.quotaId),
      late.map((d) => d.used.toString()),
      late.map((d) => d.denied.toString()),
      late.map((d) => d.quotaDenied.toString()),
      late.map((d) => d.periodLabel),
    );
    await tx.$executeRawUnsafe(`UPDATE "BillingPeriod" SET "revision" = $2, "updatedAt" = now() WHERE "period" = $1`, month, revision);
  }
}

/** Step 2: writes one claimed slice to Postgres with its cursor, in one transaction. */
export async function commitSlice(db: Db, slice: ClaimedSlice, policies: PolicyHistory): Promise<"drained" | "already_drained" | "locked"> {
  const usage = parseUsageHash(slice.minuteStartMs, slice.hash);
  const key = sliceKey(slice.minuteStartMs, slice.seq);
  const rows = rollupRows(usage);
  const deltas = await quotaDeltas(usage, policies);
  return db.$transaction(
    async (tx) => {
      if (!(await tryJobLock(tx, "rollup"))) return "locked" as const;
      const done = await tx.rollupCursor.findUnique({ where: { sliceKey: key } });
      if (done) return "already_drained" as const;
      await insertRollupRows(tx, rows);
      await applyQuotaDeltas(tx, deltas, key);
      await tx.rollupCursor.create({ data: { sliceKey: key } });
      return "drained" as const;
    },
    { timeout: 60_000, maxWait: 10_000 },
  );
}

/** Claims, commits and releases one minute until no hash is left for it. */
export async function drainMinute(deps: RollupDeps, minuteStartMs: number, policies = new PolicyHistory(deps.db)): Promise<DrainOutcome[]> {
  const p = deps.prefix ?? redisPrefix();
  const outcomes: DrainOutcome[] = [];
  for (let round = 0; round < 10; round++) {
    const slice = await claimMinute(deps.redis, minuteStartMs, p);
    if (!slice) break;
    await deps.onStep?.("claimed", minuteStartMs);
    const outcome = await commitSlice(deps.db, slice, policies);
    outcomes.push(outcome);
    if (outcome === "locked") return outcomes;
    await deps.onStep?.("committed", minuteStartMs);
    await releaseMinute(deps.redis, slice, p);
    await deps.onStep?.("released", minuteStartMs);
  }
  // Forget the minute only when no late hash appeared meanwhile (it would be claimed next round).
  if ((await deps.redis.exists(keys.usageMinute(minuteStartMs, p), keys.usageClaimed(minuteStartMs, p))) === 0) {
    await deps.redis.srem(keys.usageMinutes(p), String(minuteStartMs));
  }
  if (outcomes.length === 0) outcomes.push("empty");
  return outcomes;
}

export interface DrainReport {
  minutes: number;
  slices: number;
  alreadyDrained: number;
  locked: boolean;
}

/** Drains every minute that ended at least DRAIN_GRACE_MS before `nowMs`, oldest first. */
export async function drainClosedMinutes(deps: RollupDeps, { nowMs }: { nowMs: number }): Promise<DrainReport> {
  const p = deps.prefix ?? redisPrefix();
  const members = await deps.redis.smembers(keys.usageMinutes(p));
  const minutes = members
    .map(Number)
    .filter((m) => Number.isSafeInteger(m) && m + MINUTE_MS + DRAIN_GRACE_MS <= nowMs)
    .sort((a, b) => a - b);
  const policies = new PolicyHistory(deps.db);
  const report: DrainReport = { minutes: 0, slices: 0, alreadyDrained: 0, locked: false };
  for (const minute of minutes) {
    const outcomes = await drainMinute(deps, minute, policies);
    report.minutes++;
    report.slices += outcomes.filter((o) => o === "drained").length;
    report.alreadyDrained += outcomes.filter((o) => o === "already_drained").length;
    if (outcomes.includes("locked")) {
      report.locked = true;
      break;
    }
  }
  return report;
}

export { USAGE_OUTCOMES };

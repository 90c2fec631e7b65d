/**
 * Test fixtures for the jobs: a published policy document with quotas, and generated usage written
 * to Redis in the decision servers' exact format (lib/redis/usage.ts's UsageRecorder), with the
 * totals a correct rollup must reproduce.
 */
import type { Db } from "../../db/client";
import { UsageRecorder, type RedisLike, type UsageOutcome } from "../../redis/usage";
import { minuteStartMs } from "../../redis/usage-format";
import type { DenialReason } from "../../policy/denial-reasons";

export const TEST_TIERS = {
  free: { quotas: [{ id: "q_free_all_m", operation: "*", period: "month", limit: 300, overage: "block" }] },
  pro: {
    quotas: [
      { id: "q_pro_all_m", operation: "*", period: "month", limit: 500, overage: "bill" },
      { id: "q_pro_write_d", operation: "write", period: "day", limit: 40, overage: "bill" },
    ],
  },
} as const;

export const TEST_TENANTS: Record<string, { slug: string; name: string; tier: "free" | "pro" }> = {
  acme: { slug: "acme", name: "Acme, Inc.", tier: "free" },
  globex: { slug: "globex", name: "Globex \"Corp\"", tier: "pro" },
  initech: { slug: "initech", name: "Initech", tier: "pro" },
  umbrella: { slug: "umbrella", name: "Umbrella", tier: "free" },
};

export function testPolicyDocument(tenantTiers: Record<string, "free" | "pro"> = {}) {
  return {
    schemaVersion: 1,
    tiers: Object.fromEntries(Object.entries(TEST_TIERS).map(([name, t]) => [name, { name, weight: 1, limits: [], quotas: t.quotas }])),
    tenants: Object.fromEntries(
      Object.values(TEST_TENANTS).map((t) => [t.slug, { slug: t.slug, name: t.name, tier: tenantTiers[t.slug] ?? t.tier, status: "active", overrides: [] }]),
    ),
  };
}

export async function publishTestPolicy(db: Db, version: number, createdAt: Date, tenantTiers: Record<string, "free" | "pro"> = {}): Promise<void> {
  await db.policyVersion.create({
    data: { version, document: testPolicyDocument(tenantTiers), checksum: `test${version}`, author: "test", createdAt },
  });
}

/** Creates the tiers and tenants rows (names come from here in the export). */
export async function seedTenants(db: Db, tenantTiers: Record<string, "free" | "pro"> = {}): Promise<void> {
  for (const name of Object.keys(TEST_TIERS)) await db.tier.upsert({ where: { name }, create: { id: `tier_${name}`, name }, update: {} });
  for (const t of Object.values(TEST_TENANTS)) {
    const tier = tenantTiers[t.slug] ?? t.tier;
    await db.tenant.upsert({
      where: { slug: t.slug },
      create: { id: `ten_${t.slug}`, slug: t.slug, name: t.name, tierId: `tier_${tier}` },
      update: { tierId: `tier_${tier}` },
    });
  }
}

export interface Expected {
  /** tenant|outcome → decisions */
  decisions: Map<string, number>;
  /** tenant|quotaId|period → passed decisions (0 for a quota that only denied) */
  quotaUsed: Map<string, number>;
  /** tenant|quotaId|period → decisions denied by that quota */
  quotaDenied: Map<string, number>;
  /** tenant|keyPrefix|allowed|denied → decisions */
  keys: Map<string, number>;
  total: number;
}

export function emptyExpected(): Expected {
  return { decisions: new Map(), quotaUsed: new Map(), quotaDenied: new Map(), keys: new Map(), total: 0 };
}

function bump(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** Deterministic pseudo-random numbers (mulberry32), so a failing run can be replayed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Decision {
  atMs: number;
  tenant: string;
  tier: "free" | "pro";
  operation: "read" | "write";
  outcome: UsageOutcome;
  keyPrefix: string;
  /** For a denied decision: the id of the quota (of TEST_TIERS) that denied it; absent for other denials. */
  deniedQuota?: string;
  /** For a denied decision: the answer's reason, as the decision server records it; absent: not recorded (older data). */
  reason?: DenialReason;
}

/** The quota of `tier` that a denial of `operation` is attributed to in generated traffic: the narrowest covering one. */
export function quotaDenying(tier: "free" | "pro", operation: "read" | "write"): string {
  const quotas = TEST_TIERS[tier].quotas;
  return (quotas.find((q) => q.operation === operation) ?? quotas.find((q) => q.operation === "*")!).id;
}

/** Records decisions through the decision servers' recorder and flushes them; updates `expected`. */
export async function writeDecisions(redis: RedisLike, prefix: string, decisions: Decision[], expected: Expected): Promise<void> {
  const recorder = new UsageRecorder(redis, prefix);
  for (const d of decisions) {
    recorder.record({ atMs: d.atMs, tenant: d.tenant, tier: d.tier, operation: d.operation, outcome: d.outcome, keyPrefix: d.keyPrefix, latencyMs: 1.5, deniedQuota: d.deniedQuota ?? null, deniedReason: d.reason ?? null });
    bump(expected.decisions, `${d.tenant}|${d.outcome}`, 1);
    bump(expected.keys, `${d.tenant}|${d.keyPrefix}|${d.outcome === "denied" ? "denied" : "allowed"}`, 1);
    expected.total++;
    if (d.outcome !== "denied") {
      for (const q of TEST_TIERS[d.tier].quotas) {
        if (q.operation !== "*" && q.operation !== d.operation) continue;
        const iso = new Date(d.atMs).toISOString();
        bump(expected.quotaUsed, `${d.tenant}|${q.id}|${q.period === "month" ? iso.slice(0, 7) : iso.slice(0, 10)}`, 1);
      }
    } else if (d.deniedQuota) {
      const q = TEST_TIERS[d.tier].quotas.find((x) => x.id === d.deniedQuota);
      if (!q) throw new Error(`unknown quota ${d.deniedQuota}`);
      const iso = new Date(d.atMs).toISOString();
      const k = `${d.tenant}|${q.id}|${q.period === "month" ? iso.slice(0, 7) : iso.slice(0, 10)}`;
      bump(expected.quotaDenied, k, 1);
      bump(expected.quotaUsed, k, 0);
    }
  }
  await recorder.flush();
  if (recorder.snapshot().size > 0) throw new Error("usage flush failed");
}

/** `count` decisions spread over `minutes` minutes from `startMs`, random tenants, operations and outcomes. */
export function generateDecisions(random: () => number, startMs: number, minutes: number, count: number): Decision[] {
  const tenants = Object.values(TEST_TENANTS);
  const outcomes: UsageOutcome[] = ["allowed", "allowed", "allowed", "allowed", "denied", "shadow_denied", "degraded"];
  const out: Decision[] = [];
  for (let i = 0; i < count; i++) {
    const t = tenants[Math.floor(random() * tenants.length)]!;
    const d: Decision = {
      atMs: minuteStartMs(startMs) + Math.floor(random() * minutes * 60_000),
      tenant: t.slug,
      tier: t.tier,
      operation: random() < 0.7 ? "read" : "write",
      outcome: outcomes[Math.floor(random() * outcomes.length)]!,
      keyPrefix: `${t.slug.slice(0, 4)}${Math.floor(random() * 3)}`.padEnd(12, "0"),
    };
    // Every other denial is a quota's (no extra random draw, so seeds replay as before).
    if (d.outcome === "denied" && i % 2 === 0) d.deniedQuota = quotaDenying(d.tier, d.operation);
    out.push(d);
  }
  return out;
}

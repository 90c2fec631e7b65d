/**
 * A small policy for the decision server's tests, the benchmark and the traffic generator, and a
 * writer that publishes a compiled document to Redis the way publish does (document, current
 * pointer, key index, PUBLISH) — for tests, until lib/services' publishPolicy is used instead.
 */
import type { RedisClient } from "../../redis/client";
import { compilePolicy, finalizePolicy } from "../../policy/compile";
import type { CompiledPolicy } from "../../policy/compiled";
import { type PolicyFileInput, parsePolicyFile } from "../../policy/policy-file";
import { sha256Hex } from "../../redis/key-index";
import { keys, PUBLISHED_MARKER } from "../../redis/keys";

export const FIXTURE_KEYS = {
  acme: "sk_test_acme_0001",
  acme2: "sk_test_acme_0002",
  big: "sk_test_big_0001",
  suspended: "sk_test_sus_0001",
  shadow: "sk_test_shadow_0001",
  conc: "sk_test_conc_0001",
  quota: "sk_test_quota_0001",
  local: "sk_test_local_0001",
  burst1: "sk_test_burst_0001",
  burst2: "sk_test_burst_0002",
} as const;

/** The fixture as a policy file (tenants carry plaintext keys, as in `sluice apply`). */
export function fixturePolicyFile(): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [
      { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
      { name: "export", match: ["POST /v1/exports"], cost: 1, failureMode: "closed" },
      { name: "search", match: ["GET /v1/search"], failureMode: "local" },
      { name: "heavy", match: ["POST /v1/heavy"], cost: 3 },
    ],
    tiers: [
      {
        name: "free",
        weight: 1,
        limits: [
          { operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 5, window: "1m" },
          { operation: "search", scope: "tenant", algorithm: "fixed_window", limit: 4, window: "1m" },
        ],
      },
      {
        name: "pro",
        weight: 4,
        limits: [
          { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1_000_000, window: "1m" },
          { operation: "orders-read", scope: "ip", algorithm: "token_bucket", limit: 2, window: "10s", burst: 2 },
        ],
      },
      {
        name: "shadowy",
        limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 1, window: "1m", mode: "shadow" }],
      },
      {
        name: "conc",
        limits: [{ operation: "*", scope: "tenant", algorithm: "concurrency", limit: 1, leaseTtl: "30s" }],
      },
      {
        name: "bursty",
        limits: [{ operation: "*", scope: "api_key", algorithm: "token_bucket", limit: 50, window: "1s", burst: 50 }],
      },
      {
        name: "quota",
        limits: [],
        quotas: [{ operation: "*", period: "month", limit: 3, overage: "block" }],
      },
    ],
    globalCaps: [],
    tenants: [
      { slug: "acme", name: "Acme", tier: "free", keys: [{ name: "a", key: FIXTURE_KEYS.acme }, { name: "b", key: FIXTURE_KEYS.acme2 }] },
      { slug: "big", name: "Big", tier: "pro", keys: [{ name: "a", key: FIXTURE_KEYS.big }] },
      { slug: "sus", name: "Suspended", tier: "free", status: "suspended", keys: [{ name: "a", key: FIXTURE_KEYS.suspended }] },
      { slug: "shady", name: "Shadow", tier: "shadowy", keys: [{ name: "a", key: FIXTURE_KEYS.shadow }] },
      { slug: "conc", name: "Conc", tier: "conc", keys: [{ name: "a", key: FIXTURE_KEYS.conc }] },
      { slug: "quota", name: "Quota", tier: "quota", keys: [{ name: "a", key: FIXTURE_KEYS.quota }] },
      { slug: "burst", name: "Burst", tier: "bursty", keys: [{ name: "a", key: FIXTURE_KEYS.burst1 }, { name: "b", key: FIXTURE_KEYS.burst2 }] },
    ],
  };
}

export interface CompiledFixture {
  doc: CompiledPolicy;
  /** sha256(key) hex → tenant slug, as the key index holds it. */
  keyIndex: Record<string, string>;
}

/** Compiles a policy file object into a document at `version`, plus its key index. */
export function compileFixture(file: PolicyFileInput = fixturePolicyFile(), version = 1): CompiledFixture {
  const parsed = parsePolicyFile(file);
  if (!parsed.ok) throw new Error(parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; "));
  const keyIndex: Record<string, string> = {};
  for (const t of parsed.value.tenants) for (const k of t.keys) if (k.key) keyIndex[sha256Hex(k.key)] = t.slug;
  const body = compilePolicy({ ...parsed.value, tenants: parsed.value.tenants.map(({ keys: _k, ...t }) => t) });
  return { doc: finalizePolicy(body, version, new Date(0)), keyIndex };
}

/** Writes a document as publish does: policy:v<N>, current, key index, service tokens, PUBLISH. */
export async function writeFixturePolicy(
  redis: RedisClient,
  fixture: CompiledFixture,
  serviceTokenHashes: string[] = [],
): Promise<void> {
  await redis.set(keys.policyVersion(fixture.doc.version), JSON.stringify(fixture.doc));
  // With their markers, as publish writes them: an index and token set that were published.
  await redis.hset(keys.keyIndex(), { ...fixture.keyIndex, [PUBLISHED_MARKER]: String(fixture.doc.version) });
  await redis.sadd(keys.serviceTokens(), PUBLISHED_MARKER, ...serviceTokenHashes);
  await redis.set(keys.policyCurrent(), String(fixture.doc.version));
  await redis.publish(keys.policyChannel(), String(fixture.doc.version));
}

/**
 * The policy every `npm run bench` target decides against (bench/side-by-side.ts, bench/profile.ts),
 * published to a throwaway redis-server the way publish does.
 *
 * - tenant `bench` (key BENCH_KEY): one sliding-window counter per client address that never
 *   denies — the job the issue compares (`rate-limiter-flexible` and the lean ceiling count per
 *   address too);
 * - tenant `denier` (key BENCH_KEY_deny): the same limit at 1 per hour, for the deny path (one hot
 *   address far over its limit);
 * - tenant `demo` (key BENCH_KEY_demo): the demo policy's shape, several limits and a quota per
 *   request: a per-key sliding window, a per-key token bucket, a per-address fixed window and a
 *   tenant month quota — four counters, none of which denies at bench rates;
 * - the `rateLimitService` domain BENCH_ENVOY_DOMAIN, an imported envoyproxy/ratelimit config's
 *   shape: `generic_key: api`, then a key-only `remote_address` rule (their fixed window, counted
 *   per address) that never denies — the gRPC row beside Sluice's own (#24).
 */
import { compileFixture, type CompiledFixture, writeFixturePolicy } from "../lib/decision/testing/fixture";
import type { RedisClient } from "../lib/redis/client";
import { sha256Hex } from "../lib/redis/key-index";

export const BENCH_TOKEN = "bench_service_token";
export const BENCH_KEY = "sk_bench_side_by_side_0001";
export const BENCH_DENY_KEY = `${BENCH_KEY}_deny`;
export const BENCH_DEMO_KEY = `${BENCH_KEY}_demo`;
export const BENCH_ENVOY_DOMAIN = "bench_envoy";
const HUGE = 1_000_000_000;

/** The bench policy, compiled (its document and key index). */
export function benchPolicy(): CompiledFixture {
  return compileFixture({
    version: 1,
    defaults: { failureMode: "open" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders"] }],
    tiers: [
      { name: "bench", limits: [{ operation: "*", scope: "ip", algorithm: "sliding_window_counter", limit: HUGE, window: "1m" }] },
      { name: "deny", limits: [{ operation: "*", scope: "ip", algorithm: "sliding_window_counter", limit: 1, window: "1h" }] },
      {
        name: "demo",
        limits: [
          { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: HUGE, window: "1m" },
          { operation: "*", scope: "api_key", algorithm: "token_bucket", limit: HUGE, window: "1s", burst: HUGE },
          { operation: "*", scope: "ip", algorithm: "fixed_window", limit: HUGE, window: "1m" },
        ],
        quotas: [{ operation: "*", period: "month", limit: HUGE * 1000 }],
      },
    ],
    tenants: [
      { slug: "bench", name: "Bench", tier: "bench", keys: [{ name: "k", key: BENCH_KEY }] },
      { slug: "denier", name: "Denier", tier: "deny", keys: [{ name: "k", key: BENCH_DENY_KEY }] },
      { slug: "demo", name: "Demo", tier: "demo", keys: [{ name: "k", key: BENCH_DEMO_KEY }] },
    ],
    rateLimitService: {
      domains: [
        {
          domain: BENCH_ENVOY_DOMAIN,
          descriptors: [{ key: "generic_key", value: "api", descriptors: [{ key: "remote_address", rate_limit: { unit: "minute", requests_per_unit: HUGE } }] }],
        },
      ],
    },
  });
}

export async function publishBenchPolicy(redis: RedisClient): Promise<void> {
  await writeFixturePolicy(redis, benchPolicy(), [sha256Hex(BENCH_TOKEN)]);
}

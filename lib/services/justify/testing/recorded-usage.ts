/** The draft and the recorded usage the Justify and Prove pages are tested on (int tests and e2e/justify-prove.spec.ts). */
import { LATENCY_BUCKETS_MS, type UsageMinute } from "../../../redis/usage-format";
import { DEMO } from "../../policy/testing/policy-rows";

/** The draft under test: pro's per-key limit 1000 → 10 a minute, free's month quota 10,000 → 1,000. */
export const JUSTIFY_DRAFT = DEMO.replace(
  '{ operation: "*", scope: api_key, algorithm: sliding_window_counter, limit: 1000, window: 1m, precision: 6 }',
  '{ operation: "*", scope: api_key, algorithm: sliding_window_counter, limit: 10, window: 1m, precision: 6 }',
).replace('{ operation: "*", period: month, limit: 10000, overage: block }', '{ operation: "*", period: month, limit: 1000, overage: block }');

/** One minute of usage as the worker's rollup reads it: only these allowed decisions, no latency, errors or denials. */
export function allowedMinute(minuteStartMs: number, decisions: { tenant: string; tier: string; operation: string; keyPrefix: string; count: number }[]): UsageMinute {
  return {
    minuteStartMs,
    decisions: decisions.map((d) => ({ tenant: d.tenant, tier: d.tier, operation: d.operation, outcome: "allowed", count: d.count })),
    keys: decisions.map((d) => ({ tenant: d.tenant, keyPrefix: d.keyPrefix, outcome: "allowed", count: d.count })),
    latency: { allowed: new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0), denied: new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0) },
    errors: { redis_error: 0, redis_timeout: 0, breaker_open: 0 },
    quotaDenials: [],
    limitDenials: [],
    accuracy: [],
  };
}

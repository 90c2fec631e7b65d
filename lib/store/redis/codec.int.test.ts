/**
 * DECIDE's two ends agree on its format (lib/store/lua/wire.ts), on a real Redis: what the codec
 * writes is what the Lua reads, and what the Lua writes is what the codec reads. Each test runs
 * DECIDE's own Lua (its body, with another entry point) and names the fields as the algorithm twins
 * and the answer read them, so a change to either side alone — a field renamed, reordered, a bit
 * moved, a rule for `extra` changed in one language — fails here.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../test/helpers";
import { DECIDE_LUA } from "../lua/decide";
import { checkSpec, hasExtraField, REASONS } from "../lua/wire";
import { globalCheck, limitCheck } from "../testing/conformance";
import type { LimitCheck } from "../types";
import { readOutcome, type Reply } from "./codec";

let redis: Redis;
beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterAll(() => redis.disconnect());

/** DECIDE's body (prelude, every twin, the reply writer, MAIN) with `main` as its entry point instead. */
function withEntry(main: string): string {
  const entry = "return main()";
  expect(DECIDE_LUA.endsWith(entry)).toBe(true);
  return DECIDE_LUA.slice(0, -entry.length) + main;
}

const CHECKS: LimitCheck[] = [
  limitCheck("w:", { algorithm: "sliding_window_counter", limit: 100, windowMs: 60_000, precision: 10 }),
  limitCheck("w:", { algorithm: "token_bucket", limit: 7, windowMs: 1_000, burst: 30, mode: "delay", maxDelayMs: 250 }),
  limitCheck("w:", { algorithm: "fixed_window", mode: "shadow", exactLog: true }),
  limitCheck("w:", { algorithm: "concurrency", limit: 3, windowMs: 0, leaseTtlMs: 30_000 }),
  limitCheck("w:", { algorithm: "quota", kind: "quota", limit: 1_000, windowMs: 0, period: "day", overage: "bill" }),
  limitCheck("w:", { algorithm: "quota", kind: "quota", limit: 1_000, windowMs: 0, period: "month", overage: "block" }),
  { ...globalCheck("w:", { algorithm: "sliding_window_counter", limit: 500 }), fairShare: { weight: 4, member: "acme-corp" } },
];

describe("DECIDE's wire format, both ends on a real Redis", () => {
  it("a limit string the codec writes is read by the Lua into the fields every algorithm twin uses", async () => {
    const read = withEntry(`local c = spec(ARGV[2])
return {c.alg, tostring(c.limit), tostring(c.window), c.burst, c.precision, c.mode, c.maxDelay, c.leaseTtl, c.period, c.overage,
  c.weight, c.member, c.token, tostring(c.extra), tostring(c.fair), tostring(c.shadow), tostring(c.sampled), tostring(c.maxCost)}`);
    for (const check of CHECKS) {
      const token = check.algorithm === "concurrency" ? "0123456789abcdef0123456789abcdef" : "";
      const fields = (await redis.eval(read, 0, "", checkSpec(check, token))) as string[];
      const maxCost = check.algorithm === "quota" && check.overage === "bill" ? "false" : String(check.algorithm === "token_bucket" ? check.burst : check.limit);
      expect(fields, check.algorithm).toEqual([
        check.algorithm,
        String(check.limit),
        String(check.windowMs),
        String(check.burst),
        String(check.precision),
        check.mode,
        String(check.maxDelayMs),
        String(check.leaseTtlMs),
        check.period ?? "month",
        check.overage ?? "block",
        String(check.fairShare?.weight ?? 0),
        check.fairShare?.member ?? "",
        token,
        String(hasExtraField(check)),
        String(check.fairShare !== undefined),
        String(check.mode === "shadow"),
        String(check.exactLog === true),
        maxCost,
      ]);
    }
  });

  it("every outcome field and bit the Lua writes is read back by the codec", async () => {
    // An outcome as an algorithm twin and judge leave it; answer() writes it. A lease is the
    // limit's token, an overage the outcome's: both from ARGV[9] (0: no lease taken).
    const write = withEntry(`local c = spec(ARGV[2])
local allowed, wait = ARGV[3] == '1', tonumber(ARGV[7])
local o = {allowed = allowed, reason = ARGV[4], remaining = tonumber(ARGV[5]), idle = tonumber(ARGV[5]), resetAt = tonumber(ARGV[6]),
  delay = allowed and wait or 0, retry = allowed and 0 or wait, shadow = tonumber(ARGV[8]) % 2, overage = tonumber(ARGV[9]) or -1}
-- the accuracy meter's bits: sampled, then whether the limit (o.consumes) and its exact log admitted
if tonumber(ARGV[8]) >= 2 then o.exact, o.consumes = tonumber(ARGV[8]) >= 8, tonumber(ARGV[8]) % 8 >= 4 end
c.token = ARGV[9]
exact_log_commit = function() end
reply, rn = {now}, 1
-- committed, but for a concurrency limit's 0 (no lease taken)
answer('k', c, o, not (c.alg == 'concurrency' and ARGV[9] == '0'), true)
return reply`);
    const cases = [
      { allowed: true, reason: "ok", remaining: 41, resetAtMs: 1_800_000_000_123, wait: 0, shadow: 0, extra: "-1" },
      { allowed: true, reason: "ok", remaining: 9, resetAtMs: 1_800_000_000_000, wait: 120, shadow: 1, extra: "7" },
      { allowed: false, reason: "rate_limited", remaining: 0, resetAtMs: 1_800_000_060_000, wait: 3_500, shadow: 2 + 8, extra: "0" },
      { allowed: true, reason: "ok", remaining: 3, resetAtMs: 1_800_000_001_000, wait: 0, shadow: 2 + 4, extra: "abcdef0123456789abcdef0123456789" },
    ] as const;
    for (const check of CHECKS) {
      for (const reason of REASONS) {
        for (const c of cases) {
          const raw = (await redis.eval(write, 0, "", checkSpec(check, ""), c.allowed ? "1" : "0", reason, c.remaining, c.resetAtMs, c.wait, c.shadow, c.extra)) as Reply;
          const o = readOutcome(raw, 1, check, 2);
          const label = `${check.algorithm} ${reason} ${JSON.stringify(c)}`;
          expect({ allowed: o.allowed, reason: o.reason, remaining: o.remaining, resetAtMs: o.resetAtMs, wait: o.allowed ? o.delayMs : o.retryAfterMs }, label).toEqual({
            allowed: c.allowed,
            reason,
            remaining: c.remaining,
            resetAtMs: c.resetAtMs,
            wait: c.wait,
          });
          expect(o.shadowDenied === true, label).toBe((c.shadow & 1) !== 0);
          expect(o.accuracy, label).toEqual((c.shadow & 2) !== 0 ? { limitAdmitted: (c.shadow & 4) !== 0, exactAdmitted: (c.shadow & 8) !== 0 } : undefined);
          expect(raw.length, label).toBe(hasExtraField(check) ? 6 : 5);
          if (check.algorithm === "concurrency") expect(o.leaseId, label).toBe(c.extra === "0" ? undefined : `${c.extra}.2.${check.key}`);
          else if (hasExtraField(check)) expect(o.overage, label).toBe(Number(c.extra) >= 0 ? Number(c.extra) : undefined);
        }
      }
    }
  });
});

/**
 * The Redis EnvoyCounterStore (lib/store/envoy.ts): one ENVOY_COUNT script call per
 * ShouldRateLimit (lib/store/lua/envoy-fixed-window.ts), EVALSHA first and EVAL only when Redis
 * answers NOSCRIPT (nothing ran then, so nothing is counted twice; any other failure is never
 * retried). On a Redis Cluster each counter is its own hash slot, so the counters of one call go
 * out as one script call per counter, in parallel: each is atomic, and a call's counters are
 * independent of each other in their semantics (every one is counted, whatever the others say).
 */
import { createHash } from "node:crypto";
import type { RedisClient } from "../../redis/client";
import { withTimeout } from "../../net/timeout";
import { ENVOY_COUNT_LUA } from "../lua/envoy-fixed-window";
import type { EnvoyCounterInput, EnvoyCounterStore, EnvoyCounts } from "../envoy";
import { StoreTimeoutError } from "../types";
import { isCluster } from "./loader";

const SHA = createHash("sha1").update(ENVOY_COUNT_LUA).digest("hex");

export interface RedisEnvoyCounterOptions {
  /** TESTS ONLY: replaces Redis TIME (ARGV[1]); keys then outlive their windows by 60 s, as the DECIDE store's do. */
  testClock?: () => number;
}

export function createRedisEnvoyCounters(redis: RedisClient, options: RedisEnvoyCounterOptions = {}): EnvoyCounterStore {
  const { testClock } = options;
  const pad = testClock ? "60" : "1";

  async function script(inputs: readonly EnvoyCounterInput[]): Promise<EnvoyCounts> {
    const args: (string | number)[] = [testClock ? String(testClock()) : "", pad];
    for (const c of inputs) args.push(c.windowSeconds, c.hits);
    const keys = inputs.map((c) => c.key);
    let reply: unknown;
    try {
      reply = await redis.evalsha(SHA, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      reply = await redis.eval(ENVOY_COUNT_LUA, keys.length, ...keys, ...args);
    }
    if (!Array.isArray(reply) || reply.length !== inputs.length + 1 || !reply.every((n) => typeof n === "number")) {
      throw new Error(`ENVOY_COUNT: unexpected reply ${JSON.stringify(reply).slice(0, 200)}`);
    }
    const [nowMs, ...counts] = reply as number[];
    return { nowMs: nowMs!, counts };
  }

  async function countAll(inputs: readonly EnvoyCounterInput[]): Promise<EnvoyCounts> {
    if (!isCluster(redis) || inputs.length <= 1) return script(inputs);
    const parts = await Promise.all(inputs.map((c) => script([c])));
    return { nowMs: Math.max(...parts.map((p) => p.nowMs)), counts: parts.map((p) => p.counts[0]!) };
  }

  return {
    count(inputs, { timeoutMs }) {
      const counted = countAll(inputs);
      if (timeoutMs === undefined) return counted;
      return withTimeout(counted, timeoutMs, () => new StoreTimeoutError());
    },
  };
}

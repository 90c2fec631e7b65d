/**
 * The Redis EnvoyCounterStore (lib/envoy/counter-store.ts): every counter of a ShouldRateLimit in one
 * ENVOY_COUNT script call (lib/envoy/fixed-window-lua.ts), EVALSHA first and EVAL only when
 * Redis answers NOSCRIPT (nothing ran then, so nothing is counted twice; any other failure is
 * never retried).
 *
 * Coalescing (standalone Redis), as the DECIDE store does (lib/store/redis/coalescer.ts): the calls
 * that reach it within one event-loop turn go out as one script call, at most MAX_CALLS_PER_SCRIPT
 * calls and MAX_KEYS_PER_SCRIPT counters each; the script counts them one after the other,
 * atomically, so each call is as if it came alone. What it buys: the script invocation, TIME and
 * the command's encoding paid once per turn (bench/envoy.ts: without it the Envoy row cost more
 * server CPU per call than Sluice's own). The plain version is one script call per ShouldRateLimit,
 * which a Redis Cluster gets: there each counter is its own hash slot, so a call's counters go out
 * one script call each, in parallel — each atomic, and independent in their semantics (every one is
 * counted, whatever the others say).
 */
import { createHash } from "node:crypto";
import type { RedisClient } from "../redis/client";
import { withTimeout } from "../net/timeout";
import { ENVOY_COUNT_LUA } from "./fixed-window-lua";
import type { EnvoyCounterInput, EnvoyCounterStore, EnvoyCounts } from "./counter-store";
import { StoreTimeoutError } from "../store/types";
import { inChunks } from "../store/redis/coalescer";
import { isCluster } from "../store/redis/loader";

const SHA = createHash("sha1").update(ENVOY_COUNT_LUA).digest("hex");
const MAX_CALLS_PER_SCRIPT = 128;
const MAX_KEYS_PER_SCRIPT = 1_024;

interface Pending {
  inputs: readonly EnvoyCounterInput[];
  resolve(counts: EnvoyCounts): void;
  reject(error: unknown): void;
}

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

  async function acrossSlots(inputs: readonly EnvoyCounterInput[]): Promise<EnvoyCounts> {
    if (inputs.length <= 1) return script(inputs);
    const parts = await Promise.all(inputs.map((c) => script([c])));
    return { nowMs: Math.max(...parts.map((p) => p.nowMs)), counts: parts.map((p) => p.counts[0]!) };
  }

  let queue: Pending[] = [];
  let scheduled = false;
  function send(chunk: Pending[]): void {
    script(chunk.flatMap((p) => p.inputs)).then(
      ({ nowMs, counts }) => {
        let at = 0;
        for (const p of chunk) {
          p.resolve({ nowMs, counts: counts.slice(at, at + p.inputs.length) });
          at += p.inputs.length;
        }
      },
      (error: unknown) => {
        for (const p of chunk) p.reject(error);
      },
    );
  }
  function flush(): void {
    scheduled = false;
    const pending = queue;
    queue = [];
    inChunks(pending, MAX_CALLS_PER_SCRIPT, MAX_KEYS_PER_SCRIPT, (p) => p.inputs.length, send);
  }
  function coalesced(inputs: readonly EnvoyCounterInput[]): Promise<EnvoyCounts> {
    return new Promise((resolve, reject) => {
      queue.push({ inputs, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  }
  const countAll = isCluster(redis) ? acrossSlots : coalesced;

  return {
    count(inputs, { timeoutMs }) {
      const counted = countAll(inputs);
      if (timeoutMs === undefined) return counted;
      return withTimeout(counted, timeoutMs, () => new StoreTimeoutError());
    },
  };
}

/**
 * The in-process EnvoyCounterStore (lib/envoy/counter-store.ts): the pure model's counters
 * (lib/policy/envoy/memory.ts) on a clock. Single-node mode counts Envoy domains here, and
 * failure mode `local` counts each decision server's share here when Redis cannot answer.
 */
import { EnvoyMemoryCounters } from "../policy/envoy/memory";
import { envoyWindowStartSeconds, type EnvoyCounterStore } from "./counter-store";

export function createMemoryEnvoyCounters(clock: () => number = Date.now): EnvoyCounterStore {
  const counters = new EnvoyMemoryCounters();
  return {
    async count(inputs) {
      const nowMs = clock();
      const counts = inputs.map((c) => {
        // INCRBY 0 reads the count (its TTL renewed, which changes nothing a window-suffixed key can see).
        return counters.incrBy(`${c.key}:${envoyWindowStartSeconds(nowMs, c.windowSeconds)}`, c.hits, c.windowSeconds * 1000, nowMs);
      });
      return { nowMs, counts };
    },
  };
}

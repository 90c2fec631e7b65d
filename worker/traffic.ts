/**
 * A small traffic generator for the demo: calls POST /v1/check with a realistic mix so the
 * dashboards move from the first minute. Some keys are "hot" (they send far more than their tier
 * allows, so 429s show up), most are polite, a few are unknown; operations follow a typical API
 * mix (reads dominate). Concurrency leases are released after a short "request".
 *
 * `startTraffic({ url, serviceToken, keys, rps })` returns a handle; it stops after `durationMs`
 * (if given), on `stop()`, or on SIGINT/SIGTERM when run as `tsx worker/traffic.ts`.
 */
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { currentEnv } from "../lib/env";
import { createLogger, errorMessage } from "../lib/log";

export interface TrafficOptions {
  /** Base URL of the decision server, e.g. http://127.0.0.1:8787. */
  url: string;
  serviceToken: string;
  /** End-client API keys to use (plaintext, as the demo seeded them). */
  keys: string[];
  /** Total requests per second across all keys. */
  rps: number;
  /** Stop by itself after this long (default: run until stopped). */
  durationMs?: number;
  /** Operations to call, with weights (default: a typical REST mix). */
  operations?: { operation: string; weight: number }[];
  /** Share of keys that hammer (default 0.2); they get most of the traffic. */
  hotShare?: number;
  /** Deterministic runs for tests. */
  random?: () => number;
  onAnswer?: (answer: TrafficAnswer) => void;
}

const answerSchema = z.object({
  allowed: z.boolean(),
  status: z.number(),
  reason: z.string(),
  leaseId: z.string().optional(),
});
export type TrafficAnswer = z.infer<typeof answerSchema>;

export interface TrafficStats {
  sent: number;
  allowed: number;
  denied: number;
  errors: number;
  byReason: Record<string, number>;
}

export interface TrafficHandle {
  stats: TrafficStats;
  /** Resolves when the generator has stopped and in-flight calls have finished. */
  done: Promise<TrafficStats>;
  stop(): void;
}

export const DEFAULT_OPERATIONS = [
  { operation: "GET /v1/orders", weight: 30 },
  { operation: "GET /v1/orders/{id}", weight: 25 },
  { operation: "POST /v1/orders", weight: 8 },
  { operation: "GET /v1/search", weight: 12 },
  { operation: "GET /v1/products/{id}", weight: 15 },
  { operation: "POST /v1/uploads", weight: 4 },
  { operation: "POST /v1/exports", weight: 1 },
  { operation: "POST /v1/webhooks/{id}", weight: 5 },
];

function pickWeighted<T extends { weight: number }>(items: readonly T[], r: number): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let x = r * total;
  for (const item of items) {
    x -= item.weight;
    if (x < 0) return item;
  }
  return items[items.length - 1]!;
}

export function startTraffic(options: TrafficOptions): TrafficHandle {
  const random = options.random ?? Math.random;
  const operations = options.operations ?? DEFAULT_OPERATIONS;
  const keys = options.keys.length > 0 ? options.keys : ["sk_unknown_demo_key"];
  const hotCount = Math.max(1, Math.round(keys.length * (options.hotShare ?? 0.2)));
  const hot = keys.slice(0, hotCount);
  const polite = keys.slice(hotCount);
  const ips = Array.from({ length: 40 }, (_, i) => `198.51.100.${i + 10}`);
  const stats: TrafficStats = { sent: 0, allowed: 0, denied: 0, errors: 0, byReason: {} };
  const inFlight = new Set<Promise<void>>();
  const intervalMs = 50;
  const startedMs = performance.now();
  let scheduled = 0;
  let stopped = false;
  let resolveDone: (s: TrafficStats) => void = () => undefined;
  const done = new Promise<TrafficStats>((resolve) => (resolveDone = resolve));

  function pickKey(): string {
    const r = random();
    if (r < 0.03) return `sk_live_unknown_${Math.floor(random() * 5)}`;
    if (r < 0.65 || polite.length === 0) return hot[Math.floor(random() * hot.length)]!;
    return polite[Math.floor(random() * polite.length)]!;
  }

  async function one(): Promise<void> {
    const op = pickWeighted(operations, random()).operation.replace("{id}", String(1 + Math.floor(random() * 500)));
    const body = { key: pickKey(), operation: op, ip: ips[Math.floor(random() * ips.length)] };
    stats.sent++;
    try {
      const res = await fetch(`${options.url}/v1/check`, {
        method: "POST",
        headers: { authorization: `Bearer ${options.serviceToken}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(2_000),
      });
      if (res.status !== 200) {
        stats.errors++;
        await res.body?.cancel();
        return;
      }
      const parsed = answerSchema.safeParse(await res.json());
      if (!parsed.success) {
        stats.errors++;
        return;
      }
      const answer = parsed.data;
      if (answer.allowed) stats.allowed++;
      else stats.denied++;
      stats.byReason[answer.reason] = (stats.byReason[answer.reason] ?? 0) + 1;
      options.onAnswer?.(answer);
      if (answer.leaseId) {
        // Hold the lease like a short request would, then free it.
        await new Promise((r) => setTimeout(r, 20 + random() * 200));
        await fetch(`${options.url}/v1/release`, {
          method: "POST",
          headers: { authorization: `Bearer ${options.serviceToken}`, "content-type": "application/json" },
          body: JSON.stringify({ leaseId: answer.leaseId }),
          signal: AbortSignal.timeout(2_000),
        }).then((r) => r.body?.cancel(), () => undefined);
      }
    } catch {
      stats.errors++;
    }
  }

  const timer = setInterval(() => {
    if (stopped) return;
    // Catch up on the clock, not on ticks: a late timer (busy machine) does not lower the rate.
    const due = Math.floor(((performance.now() - startedMs) / 1000) * Math.max(0, options.rps));
    const n = Math.min(due - scheduled, Math.max(1, options.rps));
    scheduled = due;
    // Never pile up: a slow server gets fewer, not more, concurrent calls.
    for (let i = 0; i < n && inFlight.size < 200; i++) {
      const p = one().finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }, intervalMs);

  const stop = () => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    if (limit) clearTimeout(limit);
    void Promise.allSettled([...inFlight]).then(() => resolveDone(stats));
  };
  const limit = options.durationMs !== undefined ? setTimeout(stop, options.durationMs) : null;

  return { stats, done, stop };
}

const logger = createLogger("traffic");

/** `tsx worker/traffic.ts` — env: DECISION_URL, SLUICE_SERVICE_TOKEN, TRAFFIC_KEYS (comma-separated), TRAFFIC_RPS, TRAFFIC_SECONDS. */
async function main(): Promise<void> {
  const seconds = currentEnv("TRAFFIC_SECONDS");
  const handle = startTraffic({
    url: currentEnv("DECISION_URL"),
    serviceToken: currentEnv("SLUICE_SERVICE_TOKEN"),
    keys: currentEnv("TRAFFIC_KEYS").split(",").filter((k) => k !== ""),
    rps: currentEnv("TRAFFIC_RPS"),
    durationMs: seconds !== undefined ? seconds * 1000 : undefined,
  });
  process.once("SIGINT", handle.stop);
  process.once("SIGTERM", handle.stop);
  const report = setInterval(() => {
    const s = handle.stats;
    logger.info({ ...s }, `traffic: sent ${s.sent}, allowed ${s.allowed}, denied ${s.denied}, errors ${s.errors}`);
  }, 10_000);
  const stats = await handle.done;
  clearInterval(report);
  logger.info({ ...stats }, "traffic stopped");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    logger.fatal(`traffic failed: ${errorMessage(error)}`);
    process.exit(1);
  });
}

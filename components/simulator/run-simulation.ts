/**
 * The simulator's engine: replays synthetic traffic against a compiled policy with the code the
 * decision server runs — the pure decision core (lib/decision/decide.ts: plan → outcome → answer)
 * over the in-process counter store (lib/store/memory.ts, the pure algorithms) on a simulated
 * clock. Runs in the browser; nothing here talks to Redis or the network.
 */
import type { CompiledPolicyBody } from "@/lib/policy/compiled";
import { sha256Hex } from "@/lib/policy/checksum";
import type { PlannedCheck } from "@/lib/decision/checks";
import { decideWith } from "@/lib/decision/decide";
import { IN_PROCESS } from "@/lib/policy/counter-keys";
import { createMemoryStore } from "@/lib/store/memory";

export interface Traffic {
  /** Requests per second, spread evenly (0 for bursts only). */
  ratePerSecond: number;
  /** Every `burstEverySeconds`, `burstSize` extra requests arrive in the same millisecond (0: none). */
  burstEverySeconds: number;
  burstSize: number;
  /** Distinct API keys and client IPs the requests rotate over. */
  keys: number;
  ips: number;
  durationSeconds: number;
  cost: number;
}

export interface Subject {
  /** A tenant of the document, or a tier (a synthetic tenant on it). */
  kind: "tenant" | "tier";
  name: string;
}

export interface Bucket {
  /** Seconds since the start of the simulation. */
  t: number;
  allowed: number;
  delayed: number;
  denied: number;
  shadowDenied: number;
}

export interface SimulationResult {
  buckets: Bucket[];
  bucketSeconds: number;
  total: number;
  allowed: number;
  delayed: number;
  denied: number;
  shadowDenied: number;
  /** Seconds from the start to the first denial; null when nothing was denied. */
  firstDenialSeconds: number | null;
  /** Share of requests answered 429. */
  share429: number;
  /** Retry-After of the first denial and the largest one seen (seconds). */
  firstRetryAfterSeconds: number | null;
  maxRetryAfterSeconds: number;
  maxDelayMs: number;
  /** Reason counts of denials. */
  /** Denials by reason and, for 429s, the limit that denied them: `rate_limited by free-api_key`. */
  reasons: Record<string, number>;
  /** What was not simulated, in words. */
  notes: string[];
  /** null when the subject does not exist in this document. */
  missing: string | null;
}

export const MAX_SIMULATED_REQUESTS = 200_000;
const SIM_TENANT = "__simulated__";

/** Request arrival times (ms from start), sorted. */
export function arrivals(t: Traffic): number[] {
  const out: number[] = [];
  const durationMs = t.durationSeconds * 1000;
  if (t.ratePerSecond > 0) {
    const gap = 1000 / t.ratePerSecond;
    for (let at = 0; at < durationMs && out.length < MAX_SIMULATED_REQUESTS; at += gap) out.push(Math.floor(at));
  }
  if (t.burstSize > 0 && t.burstEverySeconds > 0) {
    for (let at = 0; at < durationMs; at += t.burstEverySeconds * 1000) {
      for (let i = 0; i < t.burstSize && out.length < MAX_SIMULATED_REQUESTS; i++) out.push(at);
    }
  }
  return out.sort((a, b) => a - b);
}

/** The document as the subject sees it: for a tier, a synthetic active tenant on it. */
function withSubject(doc: CompiledPolicyBody, subject: Subject): { doc: CompiledPolicyBody; slug: string } | { missing: string } {
  if (subject.kind === "tenant") {
    return Object.hasOwn(doc.tenants, subject.name) ? { doc, slug: subject.name } : { missing: `tenant ${subject.name} is not in this version` };
  }
  if (!Object.hasOwn(doc.tiers, subject.name)) return { missing: `tier ${subject.name} is not in this version` };
  return {
    doc: { ...doc, tenants: { ...doc.tenants, [SIM_TENANT]: { slug: SIM_TENANT, name: "Simulated tenant", tier: subject.name, status: "active", overrides: [] } } },
    slug: SIM_TENANT,
  };
}

export async function runSimulation(
  source: CompiledPolicyBody,
  subject: Subject,
  operations: string[],
  traffic: Traffic,
  options: { startMs: number; policyVersion: number; onProgress?: (done: number, total: number) => void },
): Promise<SimulationResult> {
  const bucketSeconds = traffic.durationSeconds <= 120 ? 1 : traffic.durationSeconds <= 1200 ? 10 : 60;
  const bucketCount = Math.ceil(traffic.durationSeconds / bucketSeconds);
  const buckets: Bucket[] = Array.from({ length: bucketCount }, (_, i) => ({ t: i * bucketSeconds, allowed: 0, delayed: 0, denied: 0, shadowDenied: 0 }));
  const result: SimulationResult = {
    buckets,
    bucketSeconds,
    total: 0,
    allowed: 0,
    delayed: 0,
    denied: 0,
    shadowDenied: 0,
    firstDenialSeconds: null,
    share429: 0,
    firstRetryAfterSeconds: null,
    maxRetryAfterSeconds: 0,
    maxDelayMs: 0,
    reasons: {},
    notes: [],
    missing: null,
  };
  const resolved = withSubject(source, subject);
  if ("missing" in resolved) {
    result.missing = resolved.missing;
    return result;
  }
  const { doc, slug } = resolved;
  const ops = operations.length > 0 ? operations : ["*"];
  let nowMs = options.startMs;
  const store = createMemoryStore({ clock: () => nowMs });
  const keyHashes = Array.from({ length: Math.max(1, traffic.keys) }, (_, i) => sha256Hex(`simulated-key-${i}`));
  const ips = Array.from({ length: Math.max(1, traffic.ips) }, (_, i) => `198.51.${Math.floor(i / 250) % 256}.${(i % 250) + 1}`);
  const times = arrivals(traffic);
  if (times.length >= MAX_SIMULATED_REQUESTS) result.notes.push(`Capped at ${MAX_SIMULATED_REQUESTS.toLocaleString("en-US")} requests.`);
  let skippedConcurrency = false;
  // Concurrency depends on how long requests take, which traffic here does not describe.
  const withoutConcurrency = (p: PlannedCheck) => {
    if (p.check.algorithm !== "concurrency") return true;
    skippedConcurrency = true;
    return false;
  };
  let count429 = 0;

  for (let i = 0; i < times.length; i++) {
    nowMs = options.startMs + times[i];
    const bucket = buckets[Math.min(bucketCount - 1, Math.floor(times[i] / 1000 / bucketSeconds))];
    result.total++;
    const { answer, denied } = await decideWith(
      store,
      {
        doc,
        policyVersion: options.policyVersion,
        tenant: slug,
        operation: ops[i % ops.length],
        keyHash: keyHashes[i % keyHashes.length],
        ip: ips[i % ips.length],
        nowMs,
        prefix: IN_PROCESS,
        dryRun: false,
        explain: false,
        keep: withoutConcurrency,
      },
      traffic.cost,
    );
    // An unknown tenant or tier is reported as `missing` above; nothing else answers 401.
    if (answer.reason === "unknown_key") continue;
    if (answer.allowed) {
      if (answer.delayMs > 0) {
        result.delayed++;
        bucket.delayed++;
        result.maxDelayMs = Math.max(result.maxDelayMs, answer.delayMs);
      } else {
        result.allowed++;
        bucket.allowed++;
      }
      if (answer.shadowDenied) {
        result.shadowDenied++;
        bucket.shadowDenied++;
      }
    } else {
      result.denied++;
      bucket.denied++;
      // The limit that denied it: the check the answer names, which the decision server records in usage.
      const reason = denied ? `${answer.reason} by ${denied.limit}` : answer.reason;
      result.reasons[reason] = (result.reasons[reason] ?? 0) + 1;
      if (answer.status === 429) count429++;
      if (result.firstDenialSeconds === null) {
        result.firstDenialSeconds = times[i] / 1000;
        result.firstRetryAfterSeconds = answer.retryAfterSeconds;
      }
      result.maxRetryAfterSeconds = Math.max(result.maxRetryAfterSeconds, answer.retryAfterSeconds);
    }
    if (i % 5000 === 4999) {
      options.onProgress?.(i + 1, times.length);
      await new Promise((r) => setTimeout(r, 0));
    }
  }
  if (skippedConcurrency) result.notes.push("Concurrency limits are not simulated: they depend on how long each request takes.");
  result.share429 = result.total === 0 ? 0 : count429 / result.total;
  await store.close();
  return result;
}

/**
 * The live accuracy meter end to end: a real decision server (SLUICE_ACCURACY_SAMPLE=1, so every
 * subject of an approximate limit is sampled) on real Redis, a bursty workload, and /metrics. The
 * meter's `sluice_accuracy_admitted_total{by="exact_log"}` must equal what an exact sliding-window
 * log written here, from the send times, admits; `by="limit"` what the server answered.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import type { PolicyFileInput } from "../policy/policy-file";
import { listUsageMinutes, readUsageMinute } from "../redis/testing/usage-minutes";
import { compileFixture, writeFixturePolicy } from "./testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const TOKEN = "svc_test_token_accuracy";
const LIMIT = 10;
const WINDOW_MS = 3_000;
const KEYS = ["sk_test_accuracy_0001", "sk_test_accuracy_0002"];

const policy: PolicyFileInput = {
  version: 1,
  operations: [{ name: "read", match: ["GET /v1/things"] }],
  tiers: [
    {
      name: "metered",
      limits: [
        { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: LIMIT, window: "3s" },
        // not approximate: never sampled
        { operation: "*", scope: "tenant", algorithm: "token_bucket", limit: 1_000, window: "1s", burst: 1_000 },
      ],
    },
  ],
  tenants: [{ slug: "metered", name: "Metered", tier: "metered", keys: KEYS.map((key, i) => ({ name: `k${i}`, key })) }],
  requirements: { limits: [{ tier: "metered", operation: "*", scope: "api_key", accuracy: "3%" }] },
};

let redis: Redis;
let server: SpawnedServer;
let prefix: string;

beforeAll(async () => {
  prefix = `${testRedisPrefix()}acc${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl());
  server = await spawnDecisionServer({
    REDIS_URL: testRedisUrl(),
    SLUICE_REDIS_PREFIX: prefix,
    SLUICE_SERVICE_TOKENS: TOKEN,
    SLUICE_ACCURACY_SAMPLE: "1",
    POLICY_POLL_MS: "200",
  });
  process.env.SLUICE_REDIS_PREFIX = prefix;
  await writeFixturePolicy(redis, compileFixture(policy));
  for (let i = 0; i < 100 && (await fetch(`${server.url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 50));
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

/** One burst: `n` requests of one key in one batch (one DECIDE call, so one instant on the store's clock). */
async function burst(key: string, n: number): Promise<{ atMs: number; doneMs: number; allowed: boolean[] }> {
  const atMs = Date.now();
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ requests: Array.from({ length: n }, () => ({ key, operation: "GET /v1/things" })) }),
  });
  const body = (await res.json()) as { results: { allowed: boolean }[] };
  return { atMs, doneMs: Date.now(), allowed: body.results.map((r) => r.allowed) };
}

interface Burst {
  /** The store decided the whole burst at one instant between these two (local clock). */
  atMs: number;
  doneMs: number;
  n: number;
}

/**
 * The exact sliding-window log, independently: admit iff fewer than LIMIT admitted in
 * (t − window, t]. Whether an earlier burst is still in a later one's window is decided on the
 * intervals the store's instants lie in; the test refuses a run where that is ambiguous (a round
 * trip longer than the bursts' margin from the window) rather than guess.
 */
function exactAdmissions(bursts: Burst[]): number {
  const admitted: { burst: Burst; n: number }[] = [];
  let total = 0;
  for (const b of bursts) {
    let live = 0;
    for (const a of admitted) {
      const surely = a.burst.atMs > b.doneMs - WINDOW_MS;
      const surelyNot = a.burst.doneMs <= b.atMs - WINDOW_MS;
      expect(surely || surelyNot, "timing unambiguous: the bursts' round trips stayed inside their margin").toBe(true);
      if (surely) live += a.n;
    }
    const n = Math.min(b.n, Math.max(0, LIMIT - live));
    admitted.push({ burst: b, n });
    total += n;
  }
  return total;
}

function metric(text: string, name: string, labels: Record<string, string>): number | null {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const [series, value] = line.split(" ");
    if (Object.entries(labels).every(([k, v]) => series!.includes(`${k}="${v}"`))) return Number(value);
  }
  return null;
}

describe("the live accuracy meter", () => {
  it("reports in /metrics the admissions of the limit and of an exact log, matching an exact log computed independently", async () => {
    // Bursts whose pairwise distances stay ≥ 800 ms away from the 3 s window, so the time between
    // the send measured here and Redis's clock (long, on a loaded machine) cannot change what the
    // exact log admits.
    // The first burst lands late in a counter window (its windows are epoch-aligned) and the second
    // early in the next: there the counter, weighting the previous window, admits at least one
    // request the exact log (which sees the first burst within 3 s) does not.
    const offsets = [0, 1_000, 1_500, 2_000, 6_000, 7_000, 8_000];
    const sizes = [[15, 12], [15, 12], [6, 4], [15, 15], [15, 9], [4, 14], [15, 6]];
    while (Date.now() % WINDOW_MS < 2_200 || Date.now() % WINDOW_MS > 2_300) await new Promise((r) => setTimeout(r, 5));
    const startMs = Date.now();
    const sent: Burst[][] = KEYS.map(() => []);
    let allowedByServer = 0;
    let requests = 0;
    for (const [i, offset] of offsets.entries()) {
      const wait = startMs + offset - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const results = await Promise.all(KEYS.map((key, k) => burst(key, sizes[i]![k]!)));
      results.forEach((r, k) => {
        sent[k]!.push({ atMs: r.atMs, doneMs: r.doneMs, n: r.allowed.length });
        allowedByServer += r.allowed.filter(Boolean).length;
        requests += r.allowed.length;
      });
    }
    const exact = sent.reduce((sum, bursts) => sum + exactAdmissions(bursts), 0);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const labels = { tier: "metered", limit: "metered-api_key" };
    expect(metric(text, "sluice_accuracy_sampled_total", labels)).toBe(requests);
    expect(metric(text, "sluice_accuracy_admitted_total", { ...labels, by: "limit" })).toBe(allowedByServer);
    expect(metric(text, "sluice_accuracy_admitted_total", { ...labels, by: "exact_log" })).toBe(exact);
    // the counter's approximation really differs from the log on this workload (else the test proves little)
    expect(allowedByServer).not.toBe(exact);
    // only approximate limits are sampled; the tolerance comes from the policy's requirements block
    expect(text).not.toMatch(/sluice_accuracy_sampled_total\{[^}]*limit="metered-tenant"/);
    expect(metric(text, "sluice_accuracy_tolerance_ratio", labels)).toBe(0.03);
    expect(text).toMatch(/^sluice_accuracy_sample_ratio 1$/m);

    // The usage aggregates carry the same counts to the dashboards and the alert (flushed every second).
    let totals = { sampled: 0, limit: 0, exact: 0 };
    for (let attempt = 0; attempt < 40; attempt++) {
      totals = { sampled: 0, limit: 0, exact: 0 };
      for (const minute of await listUsageMinutes(redis)) {
        for (const a of (await readUsageMinute(redis, minute)).accuracy) if (a.limit === "metered-api_key") totals[a.what] += a.count;
      }
      if (totals.sampled === requests) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(totals).toEqual({ sampled: requests, limit: allowedByServer, exact });
  });
});

/**
 * `regions: shared` across slow links (docs/regions.md, "Across slow links"): three regions, each with
 * its own Redis and decision server, one NATS JetStream of this test's own; `us` reaches NATS
 * directly, `eu` and `ap` through a latency proxy adding LINK_MS each way (lib/net/testing/
 * latency-proxy.ts), so every batch between regions crosses at least one slow link. Skewed traffic
 * (one region at 45 checks a second, the others at 5: 90/10), then skew that moves from region to
 * region window by window: in every window the regions together admit at most L × (1 + ε),
 * ε = (R − 1) × ρ × lag ÷ L, with lag the largest the servers measured and ρ × lag the most one region admitted within that lag
 * plus the slowest answer (the test sees a commit only when its answer arrives); and every region's
 * counter of the window ends up holding every region's admissions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { compileFixture } from "@/lib/decision/testing/fixture";
import { counterOf, driveAt, mostInSpan, type Region, regionPolicy, replicationOf, sleep, startThreeRegions, THREE_REGIONS as REGIONS, type ThreeRegions } from "@/worker/testing/regions";

const TOKEN = "svc_regions_latency_0001";
const KEY = "sk_test_regions_latency_0001";
const LIMIT = 60;
const WINDOW_MS = 4_000;
/** How long into the window every region is driven; the rest of it lets the last batches arrive. */
const DRIVE_MS = 2_400;
/** Checks a second in the busy region and in the others: 45 × 2.4 s + 5 × 2.4 s per region, about twice the limit in the window. */
const BUSY = 45;
const QUIET = 5;
/** One-way latency the proxy adds on eu's and ap's links to NATS. */
const LINK_MS = 100;
/** The policy, written to every region's Redis as publish writes it (publishing itself is lib/jobs/region-sync.int.test.ts's). */
const POLICY = compileFixture(regionPolicy({ key: KEY, limit: LIMIT, windowMs: WINDOW_MS, regions: "shared" }));

let prefix: string;
let fleet: ThreeRegions;

const target = (r: Region) => ({ url: fleet.url(r), token: TOKEN, key: KEY });

interface Round {
  demand: Record<string, number>;
  admitted: Record<string, number>;
  total: number;
  lagMs: number;
  admittedInLag: number;
  epsilon: number;
  bound: number;
  counters: Record<string, number>;
}

/**
 * One window: each region driven at `rates[r]` checks a second from just after its start (a rate,
 * not as fast as the machine allows: ρ × lag must stay below L for the bound to say anything), then
 * its counters read until they agree.
 */
async function round(rates: Partial<Record<Region, number>>): Promise<Round> {
  const regions = Object.keys(rates) as Region[];
  const startMs = Date.now() - (Date.now() % WINDOW_MS) + WINDOW_MS;
  await sleep(startMs - Date.now() + 100);
  const results = await Promise.all(regions.map((r) => driveAt(target(r), rates[r]!, startMs + DRIVE_MS)));
  expect(Date.now()).toBeLessThan(startMs + WINDOW_MS); // every answer belongs to this window
  const total = results.reduce((n, r) => n + r.admitted, 0);
  const read = async () => Object.fromEntries(await Promise.all(regions.map(async (r) => [r, await counterOf(fleet.redis[r], prefix, startMs)] as const)));
  let counters = await read();
  while (Object.values(counters).some((c) => c !== total) && Date.now() < startMs + WINDOW_MS - 150) {
    await sleep(50);
    counters = await read();
  }
  const lagMs = Math.max(...(await Promise.all(regions.map((r) => replicationOf(fleet.url(r))))).map((l) => l.lagMs ?? 0));
  const spanMs = lagMs + Math.max(...results.map((r) => r.maxLatencyMs));
  const admittedInLag = Math.max(...results.map((r) => mostInSpan(r.admittedAtMs, spanMs)));
  const epsilon = Math.min(regions.length - 1, ((regions.length - 1) * admittedInLag) / LIMIT);
  return {
    demand: Object.fromEntries(regions.map((r, i) => [r, results[i]!.answers])),
    admitted: Object.fromEntries(regions.map((r, i) => [r, results[i]!.admitted])),
    total,
    lagMs,
    admittedInLag,
    epsilon,
    bound: Math.floor(LIMIT * (1 + epsilon)),
    counters,
  };
}

const describeRound = (label: string, r: Round) =>
  `${label}: demand ${JSON.stringify(r.demand)}, admitted ${JSON.stringify(r.admitted)} = ${r.total} of ${LIMIT} (${((r.total / LIMIT) * 100).toFixed(1)} %); ` +
  `lag ${r.lagMs} ms, most admitted by one region within it ${r.admittedInLag}, ε ${r.epsilon.toFixed(3)}, bound ${r.bound}; counters ${JSON.stringify(r.counters)}`;

function expectBound(r: Round): void {
  expect(Object.values(r.demand).reduce((a, b) => a + b, 0)).toBeGreaterThan(LIMIT);
  expect(r.lagMs).toBeGreaterThanOrEqual(LINK_MS - 5); // the batches crossed a slow link (timers may fire a few ms early)
  expect(r.lagMs).toBeLessThan(WINDOW_MS);
  expect(r.total).toBeLessThanOrEqual(r.bound);
  for (const count of Object.values(r.counters)) expect(count).toBe(r.total);
}

beforeAll(async () => {
  prefix = `${testRedisPrefix()}latency:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  fleet = await startThreeRegions({ homeRedisUrl: testRedisUrl(), prefix, token: TOKEN, policy: POLICY, linkMs: LINK_MS });
}, 120_000);
afterAll(async () => {
  await fleet?.stop();
});

describe(`regions: shared with ${LINK_MS} ms on the links to NATS`, () => {
  it("two regions, 90/10 skew: at most L × (1 + ε) per window, ε from the measured lag", async () => {
    await round({ us: BUSY, eu: QUIET }); // warms the servers and the links
    const r = await round({ us: BUSY, eu: QUIET });
    console.log(describeRound("shared, 2 regions, 90/10, slow link", r));
    expectBound(r);
    expect(r.total).toBeLessThan(2 * LIMIT); // the regions saw each other's admissions
  });

  it("three regions, the busy region moving every window: at most L × (1 + ε) in each", async () => {
    const rounds = [];
    for (const heavy of REGIONS) {
      const r = await round(Object.fromEntries(REGIONS.map((r) => [r, r === heavy ? BUSY : QUIET])));
      console.log(describeRound(`shared, 3 regions, busy ${heavy}`, r));
      rounds.push(r);
    }
    for (const r of rounds) expectBound(r);
  });
});

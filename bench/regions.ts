/**
 * `npm run bench:regions`: several regions, one limit (#28, docs/regions.md) — 2 and then 3 regions
 * on this machine, each with its own redis-server and decision server, one NATS JetStream of the
 * bench's own; `us` reaches NATS directly, every other region through a latency proxy
 * (lib/net/testing/latency-proxy.ts) adding BENCH_LINK_MS + up to BENCH_JITTER_MS each way (50–150
 * ms by default), so every replicated batch crosses a slow link. One fixed_window limit of
 * BENCH_LIMIT per BENCH_WINDOW_MS per mode (`local`, `split`, `shared`: three tenants, one tier each),
 * and per mode, open-loop traffic (worker/testing/regions.ts pace):
 *   90/10 at 1× the limit · 90/10 at 3× · moving at 2× (the 90 % region changes every 2 windows) ·
 *   cut (eu's link to NATS dropped and refused; the phase starts once the linked regions find eu
 *   silent, after BENCH_SILENT_MS = SLUICE_REPLICATION_SILENT_MS) at 2× 90/10 · healed at 2×.
 * `split` shares are re-balanced in this process every BENCH_REBALANCE_MS (the worker's job,
 * lib/jobs/region-rebalance.ts). Per phase: admitted ÷ limit per window (median, worst), the
 * under-admission ((min(demand, L) − admitted) ÷ L per window) and for `shared` the bound
 * L × (1 + ε), ε = (R − 1) × ρ × lag ÷ L, with lag the measured p99 and ρ × lag the most one region
 * admitted within it, per window. Replication lag is measured by probes (a check on a shared limit
 * that never denies, then the other regions' counters polled every 5 ms until it shows) and read
 * from /readyz; the replication bytes by a NATS subscriber on sluice.replication.>.
 * Needs DATABASE_URL (PostgreSQL; a database of its own is created and dropped). About 3–4 minutes.
 */
import { loadavg } from "node:os";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { freshDatabase, type FreshDatabase } from "../test/helpers";
import type { SpawnedServer } from "../lib/processes/harness";
import { newRebalanceMemory, rebalanceRegions } from "../lib/jobs/region-rebalance";
import { startOwnRedis, type OwnRedis } from "../lib/processes/redis-server";
import { startLatencyProxy, type LatencyProxy } from "../lib/net/testing/latency-proxy";
import { startOwnNats, type OwnNats } from "../lib/net/testing/nats-server";
import { closeRegionClients, regionTargets } from "../lib/redis/regions";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { checkOnce, mostInSpan, pace, replicationOf, spawnRegionServer, waitForReplication, waitForReplicationState, type Checked } from "../worker/testing/regions";
import { quantile, renderReport, windowStats, type PhaseResult } from "./regions-report";

const LIMIT = Number(process.env.BENCH_LIMIT ?? 100);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 2_000);
const LINK_MS = Number(process.env.BENCH_LINK_MS ?? 50);
const JITTER_MS = Number(process.env.BENCH_JITTER_MS ?? 100);
const REBALANCE_MS = Number(process.env.BENCH_REBALANCE_MS ?? 2_000);
const SILENT_MS = Number(process.env.BENCH_SILENT_MS ?? 3_000);
const TOKEN = "svc_bench_regions";
const MODES = ["local", "split", "shared"] as const;
type Mode = (typeof MODES)[number];
const keyOf = (m: Mode | "probe") => `sk_bench_regions_${m}`;
const ALL_REGIONS = ["us", "eu", "ap"] as const;

const policy = `
version: 1
operations:
  - { name: orders, match: ["GET /v1/orders"] }
tiers:
${MODES.map((m) => `  - { name: ${m}, limits: [{ operation: "*", scope: tenant, algorithm: fixed_window, limit: ${LIMIT}, window: ${WINDOW_MS / 1000}s, regions: ${m} }] }`).join("\n")}
  - { name: probe, limits: [{ operation: "*", scope: tenant, algorithm: fixed_window, limit: 1000000000, window: 1h, regions: shared }] }
tenants:
${[...MODES, "probe" as const].map((m) => `  - { slug: ${m}, name: ${m}, tier: ${m}, keys: [{ name: main, key: ${keyOf(m)} }] }`).join("\n")}
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

interface Setup {
  regions: string[];
  fresh: FreshDatabase;
  nats: OwnNats;
  redis: OwnRedis[];
  clients: Redis[];
  proxies: Map<string, LatencyProxy>;
  servers: Map<string, SpawnedServer>;
  prefix: string;
  stopRebalance: () => Promise<void>;
}

async function setup(n: number): Promise<Setup> {
  const regions = ALL_REGIONS.slice(0, n) as unknown as string[];
  const prefix = `benchregions${process.pid}n${n}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  const [fresh, nats, ...redis] = await Promise.all([freshDatabase(), startOwnNats(), ...regions.map(() => startOwnRedis())]);
  const clients = redis.map((r) => new Redis(r.url));
  const proxies = new Map<string, LatencyProxy>();
  for (const r of regions.slice(1)) proxies.set(r, await startLatencyProxy({ targetPort: nats.port, latencyMs: LINK_MS, jitterMs: JITTER_MS }));
  process.env.SLUICE_REGIONS = regions.map((r, i) => `${r}=${redis[i]!.url}`).join(",");
  await applyPolicyFile(fresh.db, policy, { actor: "bench:regions" });
  await publishPolicy({ db: fresh.db, redis: clients[0]! }, { actor: "bench:regions" });
  const servers = new Map<string, SpawnedServer>();
  await Promise.all(
    regions.map(async (r, i) => {
      const server = await spawnRegionServer({
        region: r,
        redisUrl: redis[i]!.url,
        replicationUrl: proxies.get(r)?.url("nats") ?? nats.url,
        prefix,
        token: TOKEN,
        env: { SLUICE_REPLICATION_SILENT_MS: String(SILENT_MS) },
      });
      servers.set(r, server);
    }),
  );
  await waitForReplication([...servers.values()].map((s) => s.url), "ok", 30_000);
  // The worker's re-balance of split shares, at BENCH_REBALANCE_MS.
  let stopping = false;
  const memory = newRebalanceMemory();
  const loop = (async () => {
    while (!stopping) {
      await rebalanceRegions(fresh.db, regionTargets(clients[0]!), memory, { nowMs: Date.now() }).catch((e: unknown) => console.error(`re-balance: ${String(e)}`));
      await sleep(REBALANCE_MS);
    }
  })();
  return {
    regions,
    fresh,
    nats,
    redis,
    clients,
    proxies,
    servers,
    prefix,
    stopRebalance: async () => {
      stopping = true;
      await loop;
    },
  };
}

async function teardown(s: Setup): Promise<void> {
  await s.stopRebalance();
  await Promise.all([...s.servers.values()].map((x) => x.stop()));
  await closeRegionClients();
  for (const c of s.clients) c.disconnect();
  await Promise.all([...s.proxies.values()].map((p) => p.close()));
  await Promise.all([s.nats.stop(), ...s.redis.map((r) => r.stop()), s.fresh.drop()]);
}

/** Lag probes: one check at a time on the probe tenant (shared, never denies) in each region in turn, then the other regions' counters polled until it shows. */
function startProbes(s: Setup, skip: () => ReadonlySet<string>): { samples: number[]; stop: () => Promise<void> } {
  const samples: number[] = [];
  let stopping = false;
  const counter = async (i: number): Promise<number> => {
    const windowStart = Date.now() - (Date.now() % 3_600_000);
    const keys = await s.clients[i]!.keys(`${s.prefix}{t:probe}:c:*:_:${windowStart}`);
    return keys.length === 0 ? 0 : Number(await s.clients[i]!.get(keys[0]!));
  };
  const loop = (async () => {
    for (let turn = 0; !stopping; turn++) {
      await sleep(150);
      const from = turn % s.regions.length;
      if (skip().has(s.regions[from]!)) continue;
      const others = s.regions.map((_, i) => i).filter((i) => i !== from && !skip().has(s.regions[i]!));
      const before = await Promise.all(others.map(counter));
      const c = await checkOnce({ url: s.servers.get(s.regions[from]!)!.url, token: TOKEN, key: keyOf("probe") }).catch(() => null);
      if (!c?.allowed) continue;
      await Promise.all(
        others.map(async (i, j) => {
          while (Date.now() - c.sentMs < 5_000) {
            if ((await counter(i)) > before[j]!) {
              samples.push(Date.now() - c.sentMs);
              return;
            }
            await sleep(5);
          }
        }),
      );
    }
  })();
  return {
    samples,
    stop: async () => {
      stopping = true;
      await loop;
    },
  };
}

interface Phase {
  name: string;
  /** Windows the phase lasts. */
  windows: number;
  /** Demand in multiples of the limit per window. */
  times: number;
  /** The region with 90 % of the demand, by window index within the phase. */
  heavy: (w: number) => number;
  cut?: boolean;
}

function phases(n: number): Phase[] {
  return [
    { name: "90/10, 1×", windows: 2, times: 1, heavy: () => 0 },
    { name: "90/10, 3×", windows: 3, times: 3, heavy: () => 0 },
    { name: "moving, 2×", windows: 2 * n, times: 2, heavy: (w) => Math.floor(w / 2) % n },
    { name: "eu cut, 2×", windows: 2, times: 2, heavy: () => 0, cut: true },
    { name: "healed, 2×", windows: 2, times: 2, heavy: () => 0 },
  ];
}

/** Runs one phase from the next window's start; every answer is filed under the window its send and arrival both fall in. */
async function runPhase(s: Setup, mode: Mode, p: Phase, lagSpanMs: () => number): Promise<PhaseResult> {
  const n = s.regions.length;
  const startMs = Date.now() - (Date.now() % WINDOW_MS) + WINDOW_MS;
  await sleep(startMs - Date.now());
  const endMs = startMs + p.windows * WINDOW_MS;
  const answers: { region: number; c: Checked }[] = [];
  const perSec = (LIMIT * p.times * 1000) / WINDOW_MS;
  const rate = (region: number) => () => {
    const w = Math.floor((Date.now() - startMs) / WINDOW_MS);
    return perSec * (region === p.heavy(w) ? 0.9 : 0.1 / (n - 1));
  };
  const counted = mode === "shared" ? null : watchCounters(s, mode, endMs);
  await Promise.all(
    s.regions.map((r, i) =>
      pace({ url: s.servers.get(r)!.url, token: TOKEN, key: keyOf(mode) }, rate(i), endMs - 20, (c) => answers.push({ region: i, c })),
    ),
  );
  const inRedis = counted ? await counted : null;
  const result = windowStats({ mode, phase: p.name, regions: s.regions, limit: LIMIT, windowMs: WINDOW_MS, startMs, windows: p.windows, answers, lagSpanMs: lagSpanMs(), cut: p.cut ? "eu" : undefined, mostInSpan });
  if (inRedis) result.countedInRedis = Array.from({ length: p.windows }, (_, w) => inRedis.get(startMs + w * WINDOW_MS) ?? 0);
  return result;
}

/**
 * `local` and `split` count each region's admissions in its own Redis only: the sum of the regions'
 * counters of a window is what they admitted in it, whatever the answers' timing. Read every 20 ms
 * (the largest value seen per region and window, summed per window); a counter expires when its
 * window ends, so the last few ms of a window may be missed: this can only undercount.
 */
async function watchCounters(s: Setup, mode: Mode, untilMs: number): Promise<Map<number, number>> {
  const most = new Map<string, number>();
  while (Date.now() < untilMs + 50) {
    const windowStart = Date.now() - (Date.now() % WINDOW_MS);
    await Promise.all(
      s.clients.map(async (c, i) => {
        const keys = await c.keys(`${s.prefix}{t:${mode}}:c:*:_:${windowStart}`);
        const value = keys.length === 0 ? 0 : Number(await c.get(keys[0]!));
        const id = `${i}|${windowStart}`;
        most.set(id, Math.max(most.get(id) ?? 0, value));
      }),
    );
    await sleep(20);
  }
  const sums = new Map<number, number>();
  for (const [id, value] of most) {
    const windowStart = Number(id.split("|")[1]);
    sums.set(windowStart, (sums.get(windowStart) ?? 0) + value);
  }
  return sums;
}

interface ConfigResult {
  regions: string[];
  results: PhaseResult[];
  lag: { p50: number; p99: number; max: number; samples: number; readyzMaxMs: number };
  replication: { batches: number; bytes: number; seconds: number; entriesPerBatch: number };
}

async function runConfig(n: number): Promise<ConfigResult> {
  const s = await setup(n);
  const cutNow = new Set<string>();
  const probes = startProbes(s, () => cutNow);
  // Replication traffic as NATS carries it: every batch every region published.
  const watcher: NatsConnection = await connect({ servers: s.nats.url });
  const wire = { batches: 0, bytes: 0, entries: 0, since: 0, until: 0 };
  let counting = false;
  const sub = watcher.subscribe("sluice.replication.>", {
    callback: (_err, msg) => {
      if (!counting) return;
      const body = msg.json<{ entries?: unknown[] }>();
      if ((body.entries?.length ?? 0) === 0) return; // an idle region's heartbeat
      wire.batches++;
      wire.bytes += msg.data.length + (msg.headers?.toString().length ?? 0) + msg.subject.length;
      wire.entries += body.entries?.length ?? 0;
    },
  });
  const readyzMax = { ms: 0 };
  const lagP99 = () => (probes.samples.length >= 10 ? quantile(probes.samples, 0.99) : LINK_MS + JITTER_MS);
  const results: PhaseResult[] = [];
  try {
    await sleep(3_000); // a few probes before the first phase
    for (const mode of MODES) {
      for (const p of phases(n)) {
        if (p.cut) {
          s.proxies.get("eu")!.cut();
          cutNow.add("eu");
          await waitForReplication([s.servers.get("eu")!.url], "degraded", 30_000);
          // The linked regions give up eu's last share once they find it silent (docs/regions.md, "A partial cut").
          const linked = s.regions.filter((r) => r !== "eu").map((r) => s.servers.get(r)!.url);
          await waitForReplicationState(linked, "eu silent", (x) => x.silentPeers?.eu !== undefined, SILENT_MS + 30_000);
        }
        if (mode === "shared" && p.name.startsWith("90/10, 3")) {
          counting = true;
          wire.since = Date.now();
        }
        const r = await runPhase(s, mode, p, lagP99);
        if (counting) {
          counting = false;
          wire.until = Date.now();
        }
        // /readyz holds the largest lag of 10–20 s: read it after the steady phases only (after a cut it holds the catch-up).
        if (p.name.startsWith("90/10, 3") || p.name.startsWith("moving")) for (const server of s.servers.values()) readyzMax.ms = Math.max(readyzMax.ms, (await replicationOf(server.url)).lagMs ?? 0);
        results.push(r);
        console.log(`  ${n} regions · ${mode} · ${p.name}: admitted ÷ limit per window ${r.ratios.map((x) => x.toFixed(2)).join(" ")} (load ${load()})`);
        if (p.cut) {
          s.proxies.get("eu")!.heal();
          cutNow.delete("eu");
          await waitForReplicationState([...s.servers.values()].map((x) => x.url), "ok, every region heard from", (x) => x.status === "ok" && x.silentPeers === undefined, 30_000);
        }
      }
    }
  } finally {
    sub.unsubscribe();
    await watcher.close();
    await probes.stop();
    await teardown(s);
  }
  const samples = probes.samples;
  return {
    regions: s.regions,
    results,
    lag: { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), max: Math.max(...samples), samples: samples.length, readyzMaxMs: readyzMax.ms },
    replication: { batches: wire.batches, bytes: wire.bytes, seconds: (wire.until - wire.since) / 1000, entriesPerBatch: wire.batches === 0 ? 0 : wire.entries / wire.batches },
  };
}

async function main(): Promise<void> {
  const startLoad = load();
  const startedAt = new Date();
  console.log(`bench:regions: one fixed_window limit of ${LIMIT} per ${WINDOW_MS} ms per mode; links to NATS ${LINK_MS}–${LINK_MS + JITTER_MS} ms each way; split re-balanced every ${REBALANCE_MS} ms`);
  const configs: ConfigResult[] = [];
  for (const n of [2, 3]) configs.push(await runConfig(n));
  console.log(
    renderReport({
      command: `BENCH_LIMIT=${LIMIT} BENCH_WINDOW_MS=${WINDOW_MS} BENCH_LINK_MS=${LINK_MS} BENCH_JITTER_MS=${JITTER_MS} BENCH_REBALANCE_MS=${REBALANCE_MS} BENCH_SILENT_MS=${SILENT_MS} npm run bench:regions`,
      startedAt,
      loads: [startLoad, load()],
      limit: LIMIT,
      windowMs: WINDOW_MS,
      configs,
    }),
  );
}

// Interrupted: exit, so the spawned servers' exit handlers (lib/processes/) kill them.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

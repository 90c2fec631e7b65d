import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { Redis } from "ioredis";
import { compileFixture, writeFixturePolicy } from "../lib/decision/testing/fixture";
import { freePort } from "../lib/net/ports";
import { startOwnRedis } from "../lib/processes/redis-server";
import { sha256Hex } from "../lib/redis/key-index";
import { keys } from "../lib/redis/keys";
const ROOT = new URL("..", import.meta.url).pathname;
const require = createRequire(import.meta.url);
const autocannon = require("autocannon");
const MODE = process.env.MODE ?? "deny";
const PROF = process.env.PROF === "1";
const TOKEN = "bench_service_token";
process.env.SLUICE_REDIS_PREFIX = "bench:";
const own = await startOwnRedis();
const redis = new Redis(own.url);
const fixture = compileFixture({
  version: 1, defaults: { failureMode: "open" },
  operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
  tiers: [
    { name: "bench", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1_000_000_000, window: "1m" }] },
    { name: "deny", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1, window: "1h" }] },
  ],
  tenants: [{ slug: "bench", name: "Bench", tier: "bench" }, { slug: "denier", name: "Denier", tier: "deny" }],
} as never);
await writeFixturePolicy(redis, fixture, [sha256Hex(TOKEN)]);
const benchKeys = Array.from({ length: Number(process.env.KEYS ?? 5000) }, (_, i) => `bk_${i.toString(36)}_bench`);
const denyKeys = Array.from({ length: 100 }, (_, i) => `dk_${i}_deny`);
await redis.hset(keys.keyIndex(), Object.fromEntries(benchKeys.map((k) => [sha256Hex(k), "bench"])));
await redis.hset(keys.keyIndex(), Object.fromEntries(denyKeys.map((k) => [sha256Hex(k), "denier"])));
const port = await freePort();
const child = spawn(process.execPath, [...(PROF ? ["--cpu-prof", "--cpu-prof-dir=/tmp/pw/prof"] : []), "--import", "tsx", MODE === "hello" ? "bench/hello.ts" : MODE === "peer" ? "bench/peer.ts" : "worker/decision-server.ts"], {
  cwd: ROOT,
  env: { ...process.env, REDIS_URL: own.url, SLUICE_SERVICE_TOKENS: TOKEN, REDIS_TIMEOUT_MS: "2000", POLICY_POLL_MS: "5000", PORT: String(port), DECISION_PORT: String(port), DECISION_HOST: "127.0.0.1", SLUICE_DENY_CACHE: "1", SLUICE_GRPC_PORT: "0", SLUICE_DECISION_PROCESSES: "1" },
  stdio: ["ignore", "ignore", "inherit"],
});
const url = `http://127.0.0.1:${port}`;
for (let i = 0; i < 300; i++) { try { const r = await fetch(`${url}/readyz`); if (r.status === 200 || MODE === "hello" || MODE === "peer") break; } catch {} await new Promise((r) => setTimeout(r, 100)); }
if (MODE !== "hello" && MODE !== "peer") for (const k of denyKeys) await fetch(`${url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ key: k, operation: "GET /v1/orders" }) });
const rand = (n: number) => Math.floor(Math.random() * n);
const list = MODE === "deny" ? denyKeys : benchKeys;
const one = () => ({ key: list[rand(list.length)], operation: "GET /v1/orders/42" });
const mk = () => ({ body: JSON.stringify(MODE === "batch" ? { requests: Array.from({ length: 100 }, one) } : one()) });
const run = (d: number) => autocannon({ url: `${url}/v1/check`, connections: MODE === "batch" ? 8 : 50, duration: d, requests: [{ method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, setupRequest: (r: object) => ({ ...r, ...mk() }) }] });
await run(2);
await redis.config("RESETSTAT");
const { readFileSync } = await import("node:fs");
const ticks = () => { const f = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" "); return [Number(f[11]), Number(f[12])]; };
const before = ticks();
const r = await run(Number(process.env.SECS ?? 5));
const after = ticks();
const perDecision = MODE === "batch" ? 100 : 1;
console.log(`cpu µs/decision (${perDecision} per request): user ${((after[0]! - before[0]!) * 1e4 / r.requests.total / perDecision).toFixed(1)} sys ${((after[1]! - before[1]!) * 1e4 / r.requests.total / perDecision).toFixed(1)}`);
const info = await redis.info("commandstats");
console.log(MODE, "req/s", r.requests.average, "p50", r.latency.p50, "non2xx", r.non2xx);
console.log(info.split("\n").filter((l) => l.startsWith("cmdstat")).join("\n"));
child.kill("SIGTERM");
await new Promise((r) => child.once("exit", r));
redis.disconnect();
await own.stop();
process.exit(0);

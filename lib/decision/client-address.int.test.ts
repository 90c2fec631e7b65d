/**
 * Per-IP limits cannot be evaded by how an address is written or which header carries it (issue
 * #17, defect 6), through a real nginx (examples/gateways/nginx.conf, `auth_request`) in front of
 * real decision servers, and through /v1/check's `ip`:
 * - default rules (X-Forwarded-For, no trusted hops): the subject is the address nginx appended,
 *   whatever the client writes into X-Forwarded-For or X-Real-IP;
 * - nginx behind a trusted load balancer (SLUICE_TRUSTED_PROXY_HOPS=1, the test plays the balancer):
 *   every spelling of one address is one counter, and an unparseable entry is the one shared
 *   "unknown" subject, limited like any other;
 * - /v1/check: every spelling of `ip` is one counter; something that is not an address is a 400
 *   naming `ip`.
 * The tier allows 3 requests per hour per client address (an exact log) and a million per key.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";
import { compileFixture, writeFixturePolicy } from "./testing/fixture";
import { hasNginx, NGINX_EXAMPLE_TOKEN, startExampleNginx, type RunningNginx } from "./testing/nginx";

const PER_IP = 3;
const KEYS = { direct: "sk_test_addr_direct_0001", hops: "sk_test_addr_hops_0001", check: "sk_test_addr_check_0001" };

let redis: Redis;
let prefix: string;
const servers: SpawnedServer[] = [];
const gateways: RunningNginx[] = [];

beforeAll(async () => {
  prefix = `${testRedisPrefix()}addr${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl());
  const fixture = compileFixture({
    version: 1,
    defaults: { failureMode: "open" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
    tiers: [
      {
        name: "free",
        limits: [
          { operation: "*", scope: "ip", algorithm: "sliding_window_log", limit: PER_IP, window: "1h" },
          { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1_000_000, window: "1h" },
        ],
      },
    ],
    globalCaps: [],
    // One tenant per scenario: per-IP counters are per tenant, so the scenarios never share one.
    tenants: Object.entries(KEYS).map(([slug, key]) => ({ slug, name: slug, tier: "free", keys: [{ name: slug, key }] })),
  });
  process.env.SLUICE_REDIS_PREFIX = prefix;
  await writeFixturePolicy(redis, fixture);
}, 120_000);

afterAll(async () => {
  for (const g of gateways) g.stop();
  await Promise.all(servers.map((s) => s.stop()));
  redis?.disconnect();
});

async function server(env: Record<string, string> = {}): Promise<SpawnedServer> {
  const s = await spawnDecisionServer(
    { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: NGINX_EXAMPLE_TOKEN, SLUICE_DENY_CACHE: "0", ...env },
    { waitReady: true },
  );
  servers.push(s);
  return s;
}

async function statuses(gateway: string, key: string, headers: Record<string, string>[]): Promise<number[]> {
  const out: number[] = [];
  for (const [i, h] of headers.entries()) {
    const res = await fetch(`${gateway}/v1/orders/${i}`, { headers: { "x-api-key": key, ...h }, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    out.push(res.status);
  }
  return out;
}

const allowedThenDenied = (n: number) => [...Array(PER_IP).fill(200), ...Array(n - PER_IP).fill(429)];
const SPELLINGS_V4 = ["198.51.100.7", "::ffff:198.51.100.7", "::ffff:c633:6407", "0:0:0:0:0:ffff:c633:6407", "[::FFFF:198.51.100.7]:4711", "198.51.100.7:80"];
const SPELLINGS_V6 = ["2001:db8::1", "2001:DB8::1", "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8:0:0::1", "[2001:db8::1]:443"];

describe.skipIf(!hasNginx() && process.env.CI !== "true")("client addresses through nginx auth_request (examples/gateways/nginx.conf)", () => {
  it("default rules: a constant X-Real-IP with a changing X-Forwarded-For, or X-Forwarded-For: x, all count as the address nginx saw", async () => {
    const s = await server();
    const nginx = await startExampleNginx(s.port);
    gateways.push(nginx);
    const headers = [
      ...Array.from({ length: 4 }, (_, i) => ({ "x-real-ip": "203.0.113.9", "x-forwarded-for": `192.0.2.${i + 1}` })),
      { "x-forwarded-for": "x" },
      { "x-forwarded-for": "x", "x-real-ip": "x" },
    ];
    expect(await statuses(nginx.url, KEYS.direct, headers)).toEqual(allowedThenDenied(headers.length));
    // The one per-IP counter is nginx's $remote_addr.
    const counters = await redis.keys(`${prefix}{t:direct}:c:*`);
    expect(counters.filter((k) => k.includes(":127.0.0.1"))).toHaveLength(1);
  });

  it("behind one trusted hop: every spelling of an address is one counter, and an unparseable one is the shared unknown subject", async () => {
    const s = await server({ SLUICE_TRUSTED_PROXY_HOPS: "1" });
    const nginx = await startExampleNginx(s.port);
    gateways.push(nginx);
    // The test is the trusted balancer in front of nginx: it names the client in X-Forwarded-For.
    const xff = (v: string) => ({ "x-forwarded-for": v, "x-real-ip": "203.0.113.9" });
    expect(await statuses(nginx.url, KEYS.hops, SPELLINGS_V4.map(xff))).toEqual(allowedThenDenied(SPELLINGS_V4.length));
    expect(await statuses(nginx.url, KEYS.hops, SPELLINGS_V6.map(xff))).toEqual(allowedThenDenied(SPELLINGS_V6.length));
    const garbage = ["x", "unknown", "010.0.0.1", "fe80::1%eth0", "1.2.3.4.5"].map(xff);
    expect(await statuses(nginx.url, KEYS.hops, garbage)).toEqual(allowedThenDenied(garbage.length));
  });
});

describe("client addresses in /v1/check's ip", () => {
  let s: SpawnedServer;
  beforeAll(async () => {
    s = await server();
  }, 120_000);

  const check = async (ip: unknown) => {
    const res = await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { authorization: `Bearer ${NGINX_EXAMPLE_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ key: KEYS.check, operation: "GET /v1/orders/1", ip }),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: (await res.json()) as { allowed?: boolean; error?: { field: string | null } } };
  };

  it("counts every spelling of one address on one counter", async () => {
    for (const spellings of [SPELLINGS_V4, SPELLINGS_V6]) {
      const bare = spellings.filter((v) => !v.startsWith("[") && !/\.\d+:\d+$/.test(v)); // no ports in `ip`
      const answers = [];
      for (const ip of bare) answers.push((await check(ip)).body.allowed);
      expect(answers).toEqual([...Array(PER_IP).fill(true), ...Array(bare.length - PER_IP).fill(false)]);
    }
  });

  it("answers 400 naming ip for something that is not an address, never a decision without the per-IP limit", async () => {
    for (const ip of ["x", "unknown", "010.0.0.1", "1.2.3.4.5", "198.51.100.7:80", 7]) {
      const { status, body } = await check(ip);
      expect({ ip, status, field: body.error?.field }).toEqual({ ip, status: 400, field: "ip" });
    }
  });
});

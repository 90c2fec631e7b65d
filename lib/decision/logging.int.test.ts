/**
 * What a real `npm run decision` process writes: JSON lines (pino, lib/log.ts), nothing per allowed
 * decision, one line per denial reason per interval, and never an API key or service token.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "./testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const TOKEN = "sl_svc_logging_test_token_0001";
const DENIAL_LOG_MS = 400;
let redis: Redis;
let server: SpawnedServer;

interface Line {
  level: string;
  time: string;
  component: string;
  msg: string;
  reason?: string;
  count?: number;
  example?: { tenant: string | null; tier: string | null; operation: string | null };
}

/** Every line the server wrote, each parsed as JSON (a line that is not JSON fails the test). */
function lines(): Line[] {
  return server
    .output()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line);
}

function check(body: unknown) {
  return fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "x-api-key": FIXTURE_KEYS.acme },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

async function waitFor(predicate: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}lg${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl());
  const previous = process.env.SLUICE_REDIS_PREFIX;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  try {
    await writeFixturePolicy(redis, compileFixture());
  } finally {
    process.env.SLUICE_REDIS_PREFIX = previous;
  }
  server = await spawnDecisionServer(
    { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, SLUICE_DENIAL_LOG_MS: String(DENIAL_LOG_MS), LOG_LEVEL: "info" },
    { waitReady: true },
  );
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

describe("decision server logs", () => {
  it("are JSON lines with time, level, component and message", async () => {
    await waitFor(() => lines().some((l) => l.msg.startsWith("decision server listening")), 5_000);
    const all = lines();
    expect(all.length).toBeGreaterThan(0);
    for (const l of all) {
      expect(l).toMatchObject({ component: "decision" });
      expect(Date.parse(l.time)).not.toBeNaN();
      expect(["info", "warn", "error", "fatal"]).toContain(l.level);
    }
    expect(all.map((l) => l.msg)).toEqual(expect.arrayContaining([expect.stringMatching(/^policy v1 loaded$/), expect.stringMatching(/^decision server listening on :/)]));
  });

  it("write nothing for allowed decisions, and one line per denial reason per interval for hundreds of denials", async () => {
    // Let the interval in which the server started pass, so only this test's decisions are counted.
    await new Promise((r) => setTimeout(r, DENIAL_LOG_MS * 2));
    const before = lines().length;
    // The fixture's free tier: 5 per minute per key. 5 pass, then every request is rate_limited.
    for (let i = 0; i < 5; i++) expect((await (await check({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders" })).json()).allowed).toBe(true);
    await new Promise((r) => setTimeout(r, DENIAL_LOG_MS * 2));
    expect(lines().length).toBe(before);

    const answers = [
      ...(await Promise.all(Array.from({ length: 200 }, () => check({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders" })))),
      ...(await Promise.all(Array.from({ length: 30 }, (_, i) => check({ key: `sk_unknown_key_${i}_000000`, operation: "GET /v1/orders" })))),
    ];
    // What the server answered, counted by reason (a window edge may let a few of the 200 pass).
    const answered = new Map<string, number>();
    for (const a of await Promise.all(answers.map((r) => r.json() as Promise<{ allowed: boolean; reason: string }>))) {
      if (!a.allowed) answered.set(a.reason, (answered.get(a.reason) ?? 0) + 1);
    }
    expect(answered.get("rate_limited")).toBeGreaterThanOrEqual(190);
    expect(answered.get("unknown_key")).toBe(30);
    await waitFor(() => lines().some((l) => l.reason === "unknown_key"), DENIAL_LOG_MS * 10);
    await new Promise((r) => setTimeout(r, DENIAL_LOG_MS * 2));
    const denials = lines().slice(before).filter((l) => l.reason !== undefined);
    const logged = new Map<string, number>();
    for (const l of denials) logged.set(l.reason!, (logged.get(l.reason!) ?? 0) + (l.count ?? 0));
    expect(logged).toEqual(answered);
    // A handful of lines (one per reason per interval the requests spanned), not 230.
    expect(denials.length).toBeLessThanOrEqual(8);
    const limited = denials.find((l) => l.reason === "rate_limited")!;
    expect(limited).toMatchObject({ level: "info", example: { tenant: "acme", tier: "free", operation: "orders-read" } });
  });

  it("never carry an API key or the service token", () => {
    const out = server.output();
    expect(out).not.toContain(FIXTURE_KEYS.acme);
    expect(out).not.toContain("sk_unknown_key_");
    expect(out).not.toContain(TOKEN);
  });
});

import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../test/helpers";
import { createDb, type Db } from "../db/client";
import { deliverWebhook } from "../services/alert-webhook";
import { evaluateAlerts, listAlerts } from "./alerts";
import { drainClosedMinutes } from "./rollup";
import { emptyExpected, publishTestPolicy, writeDecisions, type Decision } from "./testing/fixtures";

let fresh: FreshDatabase;
let db: Db;
let redis: Redis;
const NOW = Date.UTC(2026, 11, 2, 12, 0, 30);
const MIN = 60_000;

function traffic(fromMs: number, minutes: number, perMinute: number, deniedPerMinute: number): Decision[] {
  const out: Decision[] = [];
  for (let m = 0; m < minutes; m++) {
    for (let i = 0; i < perMinute; i++) {
      out.push({ atMs: fromMs + m * MIN + i, tenant: "acme", tier: "free", operation: "read", outcome: i < deniedPerMinute ? "denied" : "allowed", keyPrefix: "acme00000000" });
    }
  }
  return out;
}

beforeAll(async () => {
  fresh = await freshDatabase();
  db = createDb(fresh.url);
  redis = new Redis(testRedisUrl());
});

afterAll(async () => {
  await redis?.quit();
  await db?.$disconnect();
  await fresh?.drop();
});

describe("alerts", () => {
  it("opens a 429-share alert after a policy change raises denials, naming that version, and resolves it", async () => {
    const windowStart = Date.UTC(2026, 11, 2, 11, 55);
    await publishTestPolicy(db, 1, new Date(windowStart - 3 * 3_600_000));
    await publishTestPolicy(db, 2, new Date(windowStart - 30_000));
    const prefix = `${testRedisPrefix()}al:`;
    // Baseline hour: 2 % denied. Window (after v2): 50 % denied.
    await writeDecisions(redis, prefix, [...traffic(windowStart - 60 * MIN, 60, 50, 1), ...traffic(windowStart, 5, 40, 20)], emptyExpected());
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: NOW + MIN });

    const opened = await evaluateAlerts(db, { nowMs: NOW });
    const subjects = opened.filter((a) => a.kind === "deny_share").map((a) => a.subject).sort();
    expect(subjects).toEqual(["tenant:acme", "tier:free"]);
    expect(opened.every((a) => a.policyVersion === 2)).toBe(true);
    expect(opened.find((a) => a.subject === "tier:free")!.message).toContain("50.0%");
    // Still firing a minute later: the same alert, not a new one.
    expect(await evaluateAlerts(db, { nowMs: NOW + MIN })).toEqual([]);
    // An hour later, nothing in the window: resolved.
    await evaluateAlerts(db, { nowMs: NOW + 3_600_000 });
    const all = await listAlerts(db, { sinceMs: 0 });
    expect(all.filter((a) => a.kind === "deny_share").every((a) => a.resolvedAt !== null)).toBe(true);
  });

  it("opens an alert when store errors pass 1 % of decisions", async () => {
    const minute = Date.UTC(2026, 11, 3, 8, 0);
    const prefix = `${testRedisPrefix()}al2:`;
    await writeDecisions(redis, prefix, traffic(minute, 1, 100, 0), emptyExpected());
    await redis.hincrby(`${prefix}{u:${minute}}:usage`, "e|redis_timeout", 5);
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: minute + 2 * MIN });
    const opened = await evaluateAlerts(db, { nowMs: minute + 2 * MIN });
    expect(opened.map((a) => a.kind)).toContain("redis_errors");
  });
});

describe("alert webhooks", () => {
  it("delivers with retries and backoff to an allowed address, and refuses loopback unless allowed", async () => {
    let calls = 0;
    const bodies: string[] = [];
    const server = http.createServer((req, res) => {
      calls++;
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        bodies.push(body);
        res.statusCode = calls < 3 ? 503 : 204;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const refused = await deliverWebhook(url, { hello: 1 }, { allowPrivate: false, baseDelayMs: 10 });
      expect(refused.ok).toBe(false);
      expect(refused.attempts).toBe(0);
      expect(calls).toBe(0);
      const refusedHttps = await deliverWebhook("https://127.0.0.1:1/x", {}, { allowPrivate: false, baseDelayMs: 10 });
      expect(refusedHttps.error).toContain("not globally reachable (loopback)");
      const ok = await deliverWebhook(url, { hello: 1 }, { allowPrivate: true, baseDelayMs: 10 });
      expect(ok).toMatchObject({ ok: true, attempts: 3, status: 204 });
      expect(JSON.parse(bodies[2]!)).toEqual({ hello: 1 });
    } finally {
      server.close();
    }
  });
});

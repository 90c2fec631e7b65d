import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import { createDb, type Db } from "@/lib/db/client";
import { spawnDecisionServer, type SpawnedServer } from "@/lib/processes/harness";
import { usageReadPlan } from "@/lib/policy/tenant-usage-answer";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { readLivePolicy } from "@/lib/services/policy/draft-view";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import { resendNotification } from "@/lib/services/billing/quota-notifications";
import { EVENT_ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verifySignature } from "@/lib/services/billing/quota-webhook";
import { setWebhookEndpoint } from "@/lib/services/billing/webhook-endpoints";
import { CLAIM_LEASE_MS, deliverDueNotifications } from "./quota-deliver";
import { detectQuotaNotifications } from "./quota-notify";
import { RETRY_WINDOW_MS } from "../services/billing/quota-notifications";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PREFIX = `${testRedisPrefix()}ntf:`;
const TOKEN = "notify-test-service-token-0123456789";
const ACME_KEY = "sk_test_notify_acme_0001";
const POLICY = `
version: 1
operations:
  - { name: read, match: ["GET /v1/things/*"] }
tiers:
  - name: small
    quotas:
      - { operation: "*", period: month, limit: 10, overage: block }
tenants:
  - { slug: acme, name: Acme, tier: small, keys: [{ name: ci, key: "${ACME_KEY}" }] }
  - { slug: other, name: Other, tier: small }
`;

interface Received {
  id: string | undefined;
  body: string;
  verified: boolean;
}

let fresh: FreshDatabase;
let db: Db;
let redis: Redis;
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
let mode: "ok" | "fail" | "hang" = "ok";
let onRequest: (() => void) | null = null;
const secrets = new Map<string, string>();

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  fresh = await freshDatabase();
  db = fresh.db;
  redis = new Redis(testRedisUrl());
  receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      const secret = secrets.get(req.url ?? "") ?? "";
      const check = verifySignature(secret, { signature: req.headers[SIGNATURE_HEADER] as string, timestamp: req.headers[TIMESTAMP_HEADER] as string }, body, Math.floor(Date.now() / 1000));
      received.push({ id: req.headers[EVENT_ID_HEADER] as string | undefined, body, verified: check.ok });
      onRequest?.();
      if (mode === "hang") return; // never answers: the worker is killed meanwhile
      res.writeHead(mode === "ok" ? 204 : 500).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  await applyPolicyFile(db, POLICY, { actor: "test" });
  await publishPolicy({ db, redis }, { actor: "test" });
  for (const scope of ["acme", "*"]) {
    const endpoint = await setWebhookEndpoint(db, { scope, url: `${receiverUrl}/${scope === "*" ? "operator" : scope}` }, "test", { allowPrivate: true });
    secrets.set(`/${scope === "*" ? "operator" : scope}`, endpoint.secret);
  }
}, 120_000);
afterAll(async () => {
  receiver?.closeAllConnections();
  receiver?.close();
  redis?.disconnect();
  await fresh?.drop();
});

/** A worker pass: detection then delivery, with its own database connection (as a separate process has). */
async function workerPass(client: Db, nowMs: number) {
  await detectQuotaNotifications({ db: client, redis, prefix: PREFIX }, { nowMs });
  return deliverDueNotifications(client, { nowMs, allowPrivate: true });
}

async function counterKey(tenant: string, nowMs: number): Promise<string> {
  const live = await readLivePolicy(db);
  return usageReadPlan(live!, tenant, nowMs, PREFIX)!.quotas[0]!.counterKey;
}

describe("quota threshold notifications", () => {
  it("crossing 80% and 100% through 3 decision servers sends one signed CloudEvent each, exactly once across 3 concurrent workers", async () => {
    const servers: SpawnedServer[] = [];
    const workers = [createDb(fresh.url), createDb(fresh.url), createDb(fresh.url)];
    try {
      for (let i = 0; i < 3; i++) servers.push(await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN }, { waitReady: true }));
      const check = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const res = await fetch(`${servers[i % 3]!.url}/v1/check`, {
            method: "POST",
            headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
            body: JSON.stringify({ key: ACME_KEY, operation: "read" }),
          });
          expect(res.status).toBe(200);
        }
      };
      await check(8);
      // The decision servers count into the key the usage answer reads (the UTC calendar month's label).
      expect(await redis.get(await counterKey("acme", Date.now()))).toBe("8");
      const rounds = async () => {
        for (let r = 0; r < 3; r++) await Promise.all(workers.map((w) => workerPass(w, Date.now())));
      };
      await rounds();
      expect(received.map((e) => JSON.parse(e.body).data.threshold)).toEqual([80]);
      await check(2);
      await rounds();
    } finally {
      await Promise.all(servers.map((s) => s.stop().catch(() => undefined)));
      await Promise.all(workers.map((w) => w.$disconnect()));
    }
    expect(received).toHaveLength(2);
    expect(received.every((e) => e.verified)).toBe(true);
    const events = received.map((e) => JSON.parse(e.body));
    expect(events.map((e) => e.data.threshold)).toEqual([80, 100]);
    expect(events[0]).toMatchObject({ specversion: "1.0", type: "dev.sluice.quota.threshold_crossed.v1", source: "/sluice/quotas", subject: expect.stringMatching(/^tenants\/acme\/quotas\//), datacontenttype: "application/json" });
    expect(events[1].data).toMatchObject({ tenant: "acme", used: 10, limit: 10, remaining: 0, period: "month" });
    expect(received.map((e) => e.id)).toEqual(events.map((e) => e.id));
    const rows = await db.quotaNotification.findMany({ where: { tenant: "acme" } });
    expect(rows.map((r) => [r.threshold, r.status, r.attempts]).sort()).toEqual([[100, "delivered", 1], [80, "delivered", 1]]);
    expect(await db.quotaNotification.count({ where: { tenant: "other" } })).toBe(0);
  }, 300_000);

  it("a worker killed while its webhook is in flight: the next one sends the same event (same id, same bytes) and records it once", async () => {
    received.length = 0;
    const nowMs = Date.now();
    await redis.set(await counterKey("other", nowMs), "8");
    mode = "hang";
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "lib/jobs/testing/notify-child.ts")], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: PREFIX, NOW_MS: String(nowMs) },
      stdio: "ignore",
    });
    await new Promise<void>((resolve) => (onRequest = resolve));
    onRequest = null;
    const exited = new Promise((r) => child.on("exit", r));
    child.kill("SIGKILL");
    await exited;
    mode = "ok";
    // Within the claim's lease nobody sends it again; after it, the next worker does.
    expect(await deliverDueNotifications(db, { nowMs: nowMs + 1000, allowPrivate: true })).toEqual({ delivered: 0, retrying: 0, failed: 0 });
    expect(await workerPass(db, nowMs + CLAIM_LEASE_MS + 1)).toMatchObject({ delivered: 1 });
    expect(received).toHaveLength(2);
    expect(received[0]!.id).toBe(received[1]!.id);
    expect(received[0]!.body).toBe(received[1]!.body);
    expect(received.every((e) => e.verified)).toBe(true);
    expect(JSON.parse(received[1]!.body).data).toMatchObject({ tenant: "other", threshold: 80 });
    const rows = await db.quotaNotification.findMany({ where: { tenant: "other" } });
    expect(rows.map((r) => [r.threshold, r.status, r.attempts, r.endpointId !== null])).toEqual([[80, "delivered", 2, true]]);
  }, 120_000);

  it("retries with backoff for 24 h, then fails; a re-send queues the same event again; a new period sends recovered", async () => {
    received.length = 0;
    const t0 = Date.now();
    await redis.set(await counterKey("other", t0), "10");
    mode = "fail";
    expect(await workerPass(db, t0)).toEqual({ delivered: 0, retrying: 1, failed: 0 });
    const row = await db.quotaNotification.findFirstOrThrow({ where: { tenant: "other", threshold: 100 } });
    expect(row).toMatchObject({ status: "pending", attempts: 1, lastStatus: 500, lastError: "HTTP 500" });
    expect(row.nextAttemptAt.getTime() - t0).toBeGreaterThanOrEqual(30_000);
    // Nothing before the backoff is over; the last attempt past the 24 h window fails the row.
    expect(await deliverDueNotifications(db, { nowMs: t0 + 1000, allowPrivate: true })).toEqual({ delivered: 0, retrying: 0, failed: 0 });
    await db.quotaNotification.update({ where: { id: row.id }, data: { nextAttemptAt: new Date(t0 + RETRY_WINDOW_MS - 1000) } });
    expect(await deliverDueNotifications(db, { nowMs: t0 + RETRY_WINDOW_MS, allowPrivate: true })).toEqual({ delivered: 0, retrying: 0, failed: 1 });
    expect((await db.quotaNotification.findUniqueOrThrow({ where: { id: row.id } })).status).toBe("failed");

    mode = "ok";
    await expect(resendNotification(db, { tenant: "acme", id: row.id }, "test", Date.now())).rejects.toThrow("no such notification");
    await resendNotification(db, { tenant: "other", id: row.id }, "test", Date.now());
    expect(await deliverDueNotifications(db, { nowMs: Date.now(), allowPrivate: true })).toMatchObject({ delivered: 1 });
    expect(received.map((e) => e.id)).toEqual([received[0]!.id, received[0]!.id, received[0]!.id]);
    expect(await db.auditEntry.count({ where: { action: "notification.resend", entityId: row.id } })).toBe(1);

    // Next month: a new period, counters at 0: one `recovered` per quota warned about, once.
    const next = new Date(t0);
    const nextMonth = Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 2);
    for (let i = 0; i < 2; i++) await workerPass(db, nextMonth);
    const recovered = await db.quotaNotification.findMany({ where: { kind: "recovered" }, orderBy: { tenant: "asc" } });
    expect(recovered.map((r) => r.tenant)).toEqual(["acme", "other"]);
    expect(received.filter((e) => JSON.parse(e.body).type === "dev.sluice.quota.recovered.v1")).toHaveLength(2);
    // A month later still: nothing more to recover from.
    await workerPass(db, nextMonth + 31 * 86_400_000);
    expect(await db.quotaNotification.count({ where: { kind: "recovered" } })).toBe(2);
  }, 120_000);
});

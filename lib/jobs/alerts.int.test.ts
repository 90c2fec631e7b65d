import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, freshStoresPerFile } from "../../test/helpers";
import { type Db } from "../db/client";
import { acknowledgeAlert, alertStates, silenceAlert } from "../services/observe/alert-actions";
import { deliverWebhook } from "../services/observe/alert-webhook";
import type { DenialReason } from "../policy/denial-reasons";
import { evaluateAlerts } from "./alerts";
import { listAlerts } from "../db/alert-repo";
import { drainClosedMinutes } from "./rollup";
import { emptyExpected, publishTestPolicy, writeDecisions, type Decision } from "./testing/fixtures";

const stores = freshStoresPerFile();
let db: Db;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
const NOW = Date.UTC(2026, 11, 2, 12, 0, 30);
const MIN = 60_000;

function traffic(
  fromMs: number,
  minutes: number,
  perMinute: number,
  deniedPerMinute: number,
  { tenant = "acme", tier = "free", reason = "rate_limited" }: { tenant?: string; tier?: "free" | "pro"; reason?: DenialReason } = {},
): Decision[] {
  const out: Decision[] = [];
  for (let m = 0; m < minutes; m++) {
    for (let i = 0; i < perMinute; i++) {
      const denied = i < deniedPerMinute;
      out.push({ atMs: fromMs + m * MIN + i, tenant, tier, operation: "read", outcome: denied ? "denied" : "allowed", keyPrefix: `${tenant}00000000`.slice(0, 12), ...(denied ? { reason } : {}) });
    }
  }
  return out;
}

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

  it("keeps a 429-share alert open while the share stays above the threshold it opened with, however long it lasts", async () => {
    // Baseline hour: 2 % denied; then 40 minutes at 60 % (the incident), then back to 2 %.
    const start = Date.UTC(2026, 11, 4, 10, 0);
    const prefix = `${testRedisPrefix()}al-long:`;
    await writeDecisions(
      redis,
      prefix,
      [...traffic(start - 60 * MIN, 60, 50, 1), ...traffic(start, 40, 50, 30), ...traffic(start + 40 * MIN, 10, 50, 1)],
      emptyExpected(),
    );
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: start + 52 * MIN });
    const openAcme = async () => (await db.alertEvent.findMany({ where: { kind: "deny_share", subject: "tenant:acme", resolvedAt: null } })).map((a) => a.id);

    await evaluateAlerts(db, { nowMs: start + 5 * MIN + 30_000 });
    const [id] = await openAcme();
    expect(id).toBeDefined();
    // Every minute of the incident: still that one alert, open (the old rule, re-judged against a
    // baseline that had absorbed the incident, resolved it after about half an hour at 60 %).
    for (let m = 6; m <= 40; m++) {
      await evaluateAlerts(db, { nowMs: start + m * MIN + 30_000 });
      expect(await openAcme(), `minute ${m}`).toEqual([id]);
    }
    // Five minutes after the share fell back to 2 %, resolved.
    await evaluateAlerts(db, { nowMs: start + 46 * MIN + 30_000 });
    expect(await openAcme()).toEqual([]);
    expect((await db.alertEvent.findUniqueOrThrow({ where: { id } })).resolvedAt).not.toBeNull();
  });

  it("counts 429s only: a tenant suspended (403) or unknown keys (401) open no 429-share alert, nor does a share already 100 % in the baseline", async () => {
    const start = Date.UTC(2026, 11, 5, 9, 0);
    const prefix = `${testRedisPrefix()}al-reasons:`;
    await writeDecisions(
      redis,
      prefix,
      [
        // globex is suspended when the window starts: every request answered 403 tenant_suspended.
        ...traffic(start - 60 * MIN, 60, 40, 0, { tenant: "globex", tier: "pro" }),
        ...traffic(start, 5, 40, 40, { tenant: "globex", tier: "pro", reason: "tenant_suspended" }),
        // Unknown keys, 401, from the window on.
        ...traffic(start, 5, 30, 30, { tenant: "_", tier: "_" as "free", reason: "unknown_key" }),
        // umbrella was already denied 100 % (429) all through the baseline.
        ...traffic(start - 60 * MIN, 65, 30, 30, { tenant: "umbrella", tier: "free" }),
      ],
      emptyExpected(),
    );
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: start + 7 * MIN });
    const opened = await evaluateAlerts(db, { nowMs: start + 5 * MIN + 30_000 });
    expect(opened.filter((a) => a.kind === "deny_share").map((a) => a.subject)).toEqual([]);
    const open = await db.alertEvent.findMany({ where: { kind: "deny_share", resolvedAt: null } });
    expect(open.map((a) => a.subject)).toEqual([]);
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

describe("acknowledge and silence", () => {
  it("are audit entries, shown on the alert; a silenced subject's reopened alert is not sent to the webhook", async () => {
    const start = Date.UTC(2026, 11, 5, 9, 0);
    const prefix = `${testRedisPrefix()}al-ack:`;
    await writeDecisions(redis, prefix, [...traffic(start, 5, 40, 30), ...traffic(start + 90 * MIN, 5, 40, 30)], emptyExpected());
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: start + 100 * MIN });
    const sre = { actor: "user:sre@example.com", role: "sre" } as const;

    const [first] = (await evaluateAlerts(db, { nowMs: start + 5 * MIN + 30_000 })).filter((a) => a.subject === "tenant:acme");
    await acknowledgeAlert(db, { id: first.id, note: "looking" }, sre, start + 6 * MIN);
    await silenceAlert(db, { id: first.id, minutes: 120 }, sre, start + 6 * MIN);
    const states = await alertStates(db, [{ id: first.id, kind: "deny_share", subject: "tenant:acme" }], start + 7 * MIN);
    expect(states.get(first.id)).toMatchObject({ acknowledgedBy: sre.actor, silencedBy: sre.actor, silencedUntil: new Date(start + 126 * MIN) });
    expect(await db.auditEntry.count({ where: { entity: "alert", entityId: first.id, actor: sre.actor } })).toBe(2);

    // Resolved in the quiet hour, reopened by the second burst: silenced, so no delivery attempt.
    await evaluateAlerts(db, { nowMs: start + 20 * MIN });
    const reopened = (await evaluateAlerts(db, { nowMs: start + 95 * MIN + 30_000, webhookUrl: "http://127.0.0.1:9/never" })).find((a) => a.subject === "tenant:acme");
    expect(reopened).toBeDefined();
    expect(reopened!.id).not.toBe(first.id);
    expect((await db.alertEvent.findUniqueOrThrow({ where: { id: reopened!.id } })).webhookStatus).toBe(`silenced until ${new Date(start + 126 * MIN).toISOString()}`);
    // The tier's alert is not silenced: it was attempted (and refused: loopback).
    const tier = await db.alertEvent.findFirstOrThrow({ where: { subject: "tier:free", startedAt: new Date(start + 95 * MIN) } });
    expect(tier.webhookStatus).toMatch(/^failed/);
  });

  it("are refused to roles the alert does not page, and name bad fields", async () => {
    const alert = await db.alertEvent.findFirstOrThrow();
    for (const role of ["product", "billing"] as const) {
      await expect(acknowledgeAlert(db, { id: alert.id }, { actor: "x", role })).rejects.toMatchObject({ code: "forbidden" });
    }
    await expect(silenceAlert(db, { id: alert.id, minutes: 1 }, { actor: "x", role: "sre" })).rejects.toMatchObject({ code: "invalid_request", field: "minutes" });
    await expect(acknowledgeAlert(db, { id: "al_nope" }, { actor: "x", role: "sre" })).rejects.toMatchObject({ code: "not_found" });
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

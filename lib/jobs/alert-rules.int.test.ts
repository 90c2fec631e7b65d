import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { testRedisPrefix, freshStoresPerFile } from "../../test/helpers";
import type { Db } from "../db/client";
import { readAlertRules, saveAlertRule } from "../services/observe/alert-rules";
import { serviceError } from "../services/testing/service-error";
import { evaluateAlerts } from "./alerts";
import { drainClosedMinutes } from "./rollup";
import { emptyExpected, writeDecisions, type Decision } from "./testing/fixtures";

const MIN = 60_000;
const sre = { actor: "user:sre@example.com", role: "sre" } as const;
const LOCAL = { allowPrivateWebhooks: true };

const stores = freshStoresPerFile();
let db: Db;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
let run = 0;

/** `minutes` minutes of `perMinute` decisions of tenant acme (tier free) from `fromMs`, `deniedPerMinute` of them 429s. */
function traffic(fromMs: number, minutes: number, perMinute: number, deniedPerMinute: number): Decision[] {
  const out: Decision[] = [];
  for (let m = 0; m < minutes; m++) {
    for (let i = 0; i < perMinute; i++) {
      const denied = i < deniedPerMinute;
      out.push({ atMs: fromMs + m * MIN + i, tenant: "acme", tier: "free", operation: "read", outcome: denied ? "denied" : "allowed", keyPrefix: "acme00000000", ...(denied ? { reason: "rate_limited" as const } : {}) });
    }
  }
  return out;
}

async function record(decisions: Decision[], drainAtMs: number): Promise<void> {
  const prefix = `${testRedisPrefix()}alrules${++run}:`;
  await writeDecisions(redis, prefix, decisions, emptyExpected());
  await drainClosedMinutes({ db, redis, prefix }, { nowMs: drainAtMs });
}

async function denyShareFires(nowMs: number): Promise<boolean> {
  const opened = await evaluateAlerts(db, { nowMs });
  return opened.some((a) => a.kind === "deny_share" && a.subject === "tenant:acme");
}

beforeEach(async () => {
  await db.alertEvent.deleteMany();
  await db.alertRule.deleteMany();
  await db.usageRollup.deleteMany();
  await db.rollupCursor.deleteMany();
  await db.auditEntry.deleteMany();
});

describe("editable alert rules, used by the worker's alert job", () => {
  it("an edited threshold decides whether the 429-share alert fires", async () => {
    const start = Date.UTC(2026, 11, 6, 9, 0);
    // 30 % of acme's decisions denied (429) for five minutes, no traffic in the hour before.
    await record(traffic(start, 5, 100, 30), start + 7 * MIN);
    const now = start + 5 * MIN + 30_000;
    // Default: max(5 %, 2 × 0, 0 + 10 points) = 10 % < 30 %: fires.
    expect(await denyShareFires(now)).toBe(true);
    await db.alertEvent.deleteMany();
    await saveAlertRule(db, { kind: "deny_share", thresholdPercent: 40, windowMinutes: 5, webhookUrl: "" }, sre, LOCAL);
    expect(await denyShareFires(now)).toBe(false);
    await saveAlertRule(db, { kind: "deny_share", thresholdPercent: 25, windowMinutes: 5, webhookUrl: "" }, sre, LOCAL);
    expect(await denyShareFires(now)).toBe(true);
    const audit = await db.auditEntry.findMany({ orderBy: { at: "asc" } });
    expect(audit.map((a) => [a.actor, a.action, a.entityId])).toEqual([
      [sre.actor, "alert_rule.update", "deny_share"],
      [sre.actor, "alert_rule.update", "deny_share"],
    ]);
    expect(audit[1]).toMatchObject({ before: { threshold: 0.4, windowMinutes: 5 }, after: { threshold: 0.25, windowMinutes: 5, webhookUrl: null } });
  });

  it("an edited window decides which minutes are judged", async () => {
    const start = Date.UTC(2026, 11, 6, 10, 0);
    // 30 % denied from 9 to 7 minutes before now: outside the default 5-minute window.
    await record(traffic(start, 3, 100, 30), start + 12 * MIN);
    const now = start + 9 * MIN + 30_000;
    expect(await denyShareFires(now)).toBe(false);
    await saveAlertRule(db, { kind: "deny_share", thresholdPercent: 5, windowMinutes: 10, webhookUrl: "" }, sre, LOCAL);
    expect(await denyShareFires(now)).toBe(true);
  });

  it("sends a rule's alerts to the rule's webhook when it has one", async () => {
    const received: string[] = [];
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        received.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      await saveAlertRule(db, { kind: "deny_share", thresholdPercent: 5, windowMinutes: 5, webhookUrl: url }, sre, LOCAL);
      const start = Date.UTC(2026, 11, 6, 11, 0);
      await record(traffic(start, 5, 100, 30), start + 7 * MIN);
      const opened = await evaluateAlerts(db, { nowMs: start + 5 * MIN + 30_000, allowPrivateWebhooks: true });
      expect(opened.filter((a) => a.kind === "deny_share")).not.toHaveLength(0);
      expect(received.map((b) => (JSON.parse(b) as { type: string; kind: string }).kind)).toContain("deny_share");
    } finally {
      server.close();
    }
  });

  it("refuses bad rules naming the field, and roles that may not act on alerts; a refusal saves nothing", async () => {
    const bad = async (input: Record<string, unknown>, field: string, message: RegExp) => {
      const error = await serviceError(saveAlertRule(db, { kind: "deny_share", thresholdPercent: 10, windowMinutes: 5, webhookUrl: "", ...input }, sre, { allowPrivateWebhooks: false }));
      expect(error).toMatchObject({ code: "invalid_request", field });
      expect(error.message).toMatch(message);
    };
    await bad({ thresholdPercent: 0 }, "thresholdPercent", /at least 0.1 %/);
    await bad({ thresholdPercent: 150 }, "thresholdPercent", /at most 100 %/);
    await bad({ windowMinutes: 0 }, "windowMinutes", /at least 1 minute/);
    await bad({ windowMinutes: 2.5 }, "windowMinutes", /whole minutes/);
    await bad({ kind: "quota", windowMinutes: 5 }, "windowMinutes", /no window/);
    await bad({ webhookUrl: "hooks dot example" }, "webhookUrl", /expected a URL/);
    await bad({ webhookUrl: "http://127.0.0.1:9/x" }, "webhookUrl", /https/);
    await bad({ kind: "latency" }, "kind", /deny_share, quota or redis_errors/);
    expect(await serviceError(saveAlertRule(db, { kind: "quota", thresholdPercent: 90, windowMinutes: null, webhookUrl: "" }, { actor: "user:pm@example.com", role: "product" }, LOCAL))).toMatchObject({ code: "forbidden" });
    expect(await db.alertRule.count()).toBe(0);
    expect(await db.auditEntry.count()).toBe(0);
    // The defaults stand.
    expect((await readAlertRules(db)).quota).toMatchObject({ threshold: 0.8, windowMinutes: null, webhookUrl: null });
  });
});

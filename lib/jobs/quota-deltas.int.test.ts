/**
 * The rollup's quota rows for a tenant anchored elsewhere than the UTC calendar (issue #26): its
 * usage counts in the UTC day and month rows the billing export states, and also under its own
 * period's label — the counter's — for what refills and compares counters and for the export of
 * that tenant's own periods (lib/services/billing/billing-period-lines.ts); the UTC-month statement never
 * reads the latter.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { freshStoresPerFile } from "@/test/helpers";
import { Redis } from "ioredis";
import { quotaUsageOfMonth } from "../db/billing-repo";
import { billingMonthOf } from "../policy/billing-month";
import { billingPeriod } from "../policy/billing-period";
import { quotaPeriod } from "../policy/quota-period";
import { applyPolicyFile } from "../services/policy/apply-policy-file";
import { publishPolicy } from "../services/policy/publish-policy";
import { PolicyHistory } from "../db/quota-defs";
import { quotaDeltas } from "./rollup";
import type { PrismaClient } from "@/lib/generated/prisma/client";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8");
const LA = { anchor: "2026-01-15", timeZone: "America/Los_Angeles" };
const stores = freshStoresPerFile("qdelta");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));

describe("quota rows of an anchored tenant", () => {
  it("count in the UTC rows and under the tenant's own period label, which the monthly statement leaves out", async () => {
    const anchored = DEMO.replace("  - slug: acme\n    name: Acme Corp\n", `  - slug: acme\n    name: Acme Corp\n    billing: { anchor: ${LA.anchor}, timeZone: ${LA.timeZone} }\n`);
    expect(anchored).not.toBe(DEMO);
    await applyPolicyFile(db, anchored, { actor: "test" });
    await publishPolicy({ db, redis }, { actor: "test" });
    const minuteStartMs = Math.floor(Date.now() / 60_000) * 60_000;
    const usage = {
      minuteStartMs,
      decisions: [
        { tenant: "acme", tier: "free", operation: "orders-read", outcome: "allowed" as const, count: 4 },
        { tenant: "globex", tier: "pro", operation: "orders-read", outcome: "allowed" as const, count: 2 },
      ],
      keys: [],
      latency: { allowed: [], denied: [] },
      errors: { redis_error: 0, redis_timeout: 0, breaker_open: 0 },
      quotaDenials: [],
      limitDenials: [],
      accuracy: [],
    };
    const deltas = await quotaDeltas(usage, new PolicyHistory(db));
    const utcMonth = quotaPeriod(minuteStartMs, "month").label;
    const own = billingPeriod(minuteStartMs, "month", LA).label;
    const acme = deltas.filter((d) => d.tenant === "acme");
    // The own row is adjusted in the month whose export holds its period (lib/policy/billing-month.ts);
    // the `#own` share says what of the UTC month the tenant spent in its own periods.
    expect(acme.map((d) => [d.period, d.month, Number(d.used)]).sort()).toEqual([
      [own, billingMonthOf(billingPeriod(minuteStartMs, "month", LA)), 4],
      [utcMonth, utcMonth, 4],
      [`${utcMonth}#own`, "", 4],
    ].sort());
    // A tenant without billing: only its UTC rows, as before.
    expect(deltas.filter((d) => d.tenant === "globex").every((d) => !d.period.includes("@"))).toBe(true);

    await db.quotaUsage.createMany({ data: acme.map((d) => ({ tenant: d.tenant, quotaId: d.quotaId, period: d.period, used: d.used })) });
    const statement = await quotaUsageOfMonth(db, utcMonth);
    expect(statement.map((r) => r.period)).toEqual([utcMonth]);
  });
});

import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compileFixture } from "../../decision/testing/fixture";
import type { PolicyFileInput } from "../../policy/policy-file";
import { formatNfrCsv, formatNfrMarkdown, NFR_COLUMNS, nfrRows } from "./nfr";

const DEMO = parse(readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8")) as PolicyFileInput;

describe("the policy as non-functional requirements", () => {
  it("lists tiers lightest first, whatever order the stored document's keys come back in", async () => {
    const { doc } = compileFixture(DEMO);
    // PostgreSQL's jsonb returns object keys shortest first: pro, free, enterprise.
    const stored = { ...doc, tiers: { pro: doc.tiers.pro!, free: doc.tiers.free!, enterprise: doc.tiers.enterprise! } };
    const tiers = (await nfrRows(stored)).filter((r) => r.tenant === null && r.kind !== "global cap").map((r) => r.tier);
    expect([...new Set(tiers)]).toEqual(["free", "pro", "enterprise"]);
  });

  it("has one row per tier limit and quota, per global cap and per tenant override, each with the policy's own numbers", async () => {
    const { doc } = compileFixture(DEMO);
    const rows = await nfrRows(doc);
    const limits = Object.values(doc.tiers).reduce((s, t) => s + t.limits.length + t.quotas.length, 0);
    const overrides = Object.values(doc.tenants).reduce((s, t) => s + t.overrides.length, 0);
    expect(rows).toHaveLength(limits + doc.globalCaps.length + overrides);
    const row = (tier: string, operation: string, scope: string, kind = "limit") =>
      rows.find((r) => r.tier === tier && r.operation.startsWith(operation) && r.scope === scope && r.kind === kind && r.tenant === null)!;

    const freeKey = row("free", "*", "api_key");
    expect(freeKey).toMatchObject({ limit: "100 per 1m", algorithm: "sliding_window_counter (precision 1)", mode: "reject", accuracy: "within 5% of an exact log" });
    expect(freeKey.boundary).toBe("the 100th request is allowed, the 101st rejected (429 rate_limited, Retry-After 61 s)");
    expect(freeKey.headers).toContain('RateLimit-Policy: "free-api_key";q=100;w=60');
    expect(freeKey.failureMode).toBe("open, except local: search; closed: export");

    // the fixed window admits twice its limit across an edge; the exact log never more than its limit
    expect(row("free", "*", "ip").edgeBurst).toMatch(/^600 units within 2 ms across an edge \(2\.00× the limit\)/);
    expect(row("free", "search", "api_key").edgeBurst).toMatch(/^30 units .*\(1\.00× the limit\)/);
    // a cost-2 operation: 300 requests in 600 units
    expect(row("pro", "orders-write", "tenant").boundary).toMatch(/^the 300th request of cost 2 is allowed, the 301st rejected/);
    // shaping: 40 at once, then up to 500 ms of waiting, then 429
    const shaped = row("free", "orders-read", "ip");
    expect(shaped.boundary).toBe("40 requests pass at once, the next 10 wait (up to 500 ms), the 51st rejected (429 rate_limited, Retry-After 1 s)");
    expect(shaped.delaySla).toMatch(/^waits at most 500ms/);
    // shadow: reported, never rejected, no headers
    expect(row("free", "uploads", "tenant").boundary).toMatch(/the 6th is reported \(shadowDenied: true\) but never rejected$/);
    expect(row("free", "uploads", "tenant").headers).toMatch(/^none/);
    // concurrency and quotas
    expect(row("free", "*", "tenant").boundary).toMatch(/the 11th rejected \(429 concurrency_limited, until a lease is released or expires\)/);
    expect(row("free", "*", "tenant", "quota")).toMatchObject({ quota: "10,000 per month, overage block", window: "calendar month, UTC" });
    expect(row("free", "*", "tenant", "quota").boundary).toMatch(/the 10,000th request is allowed, the 10,001st rejected \(429 quota_exhausted/);
    expect(row("pro", "*", "tenant", "quota").boundary).toMatch(/^never rejected: past 1,000,000 units/);
    // the weighted cap's shares come from the tier weights (1, 4, 16 of 21)
    expect(rows.find((r) => r.kind === "global cap")!.boundary).toMatch(/free 2, pro 9, enterprise 38 per window/);
    // an override's row: the tenant, its limit and its expiry
    expect(rows.find((r) => r.tenant === "acme")).toMatchObject({ limit: "100 per 1h (until 2027-01-01T00:00:00.000Z)", operation: "export" });
  });

  it("follows the policy: a changed number or algorithm changes its row and nothing else", async () => {
    const changed = structuredClone(DEMO) as { tiers: { limits: Record<string, unknown>[] }[] };
    changed.tiers[0]!.limits[0] = { operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 120, window: "30s" };
    const before = await nfrRows(compileFixture(DEMO).doc);
    const after = await nfrRows(compileFixture(changed as PolicyFileInput).doc);
    expect(after[0]).toMatchObject({ limit: "120 per 30s", algorithm: "fixed_window" });
    expect(after[0]!.boundary).toMatch(/^the 120th request is allowed, the 121st rejected/);
    expect(after[0]!.edgeBurst).toMatch(/^240 units/);
    expect(after.slice(1)).toEqual(before.slice(1));
  });

  it("prints as markdown and as CSV with every column", async () => {
    const { doc } = compileFixture(DEMO);
    const rows = await nfrRows(doc);
    const md = formatNfrMarkdown(rows, doc);
    expect(md).toMatch(/^# Non-functional requirements — policy v1/);
    expect(md.split("\n").filter((l) => l.startsWith("| ")).length).toBe(rows.length + 2); // header, separator, rows
    const csv = formatNfrCsv(rows).trimEnd().split("\n");
    expect(csv[0]).toBe(NFR_COLUMNS.map((c) => c.key).join(","));
    expect(csv).toHaveLength(rows.length + 1);
  });
});

import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compileFixture } from "../../decision/testing/fixture";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { limitsFor } from "../../policy/effective-limits";
import type { PolicyFileInput } from "../../policy/policy-file";
import { CERT_LIMIT, CERT_WINDOW_MS, planCertification } from "./plan";
import { formatReportHtml, formatReportText, verdictText, type CertificationReport } from "./report";

const DEMO = parse(readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8")) as PolicyFileInput;
let n = 0;
const plan = planCertification(compileFixture(DEMO).doc, () => `sk_cert_test_${String(++n).padStart(6, "0")}`);

describe("the certification plan", () => {
  it("has a cell per tier limit, quota and global cap, and a check for every operation and *", () => {
    const { doc } = compileFixture(DEMO);
    const expected = Object.values(doc.tiers).reduce((s, t) => s + t.limits.length + t.quotas.length, 0) + doc.globalCaps.length;
    expect(plan.cells).toHaveLength(expected);
    expect(plan.operations.map((o) => o.name)).toEqual([...Object.keys(doc.operations), "*"]);
    expect(plan.operations.find((o) => o.name === "export")!.failureMode).toBe("closed");
  });

  it("serves a valid document where every subject is alone: its own tenant and tier, holding only its limit", () => {
    expect(parseCompiledPolicy(JSON.parse(JSON.stringify(plan.doc))).ok).toBe(true);
    const subjects = plan.cells.flatMap((c) => Object.values(c.subjects));
    expect(new Set(subjects.map((s) => s.tenant)).size).toBe(subjects.length);
    expect(new Set(subjects.map((s) => s.key)).size).toBe(subjects.length);
    for (const c of plan.cells.filter((x) => x.kind !== "cap")) {
      const s = c.subjects.boundary!;
      const effective = limitsFor(plan.doc, s.tenant, c.operation === "*" ? "*" : c.operation, 0)!;
      expect(effective.limits.length + effective.quotas.length).toBe(1);
      expect(effective.globalCaps).toEqual([]);
    }
  });

  it("time-compresses long windows and large limits, and says from what to what", () => {
    const freeKey = plan.cells.find((c) => c.label === "free-api_key")!;
    expect(freeKey.limit).toMatchObject({ limit: CERT_LIMIT, windowMs: CERT_WINDOW_MS, precision: 1 });
    expect(freeKey.scaled).toEqual({ from: "100 per 1m", to: "50 per 2s" });
    // a 1 s bucket of 20 (burst 40, 500 ms of delay) already fits: unchanged
    expect(plan.cells.find((c) => c.label === "free-orders-read-ip")!.scaled).toBeNull();
    // a bucket is scaled by what one burst admits: 1000/s, burst 2000 and 1 s of delay (3000) → × 50/3000
    expect(plan.cells.find((c) => c.label === "enterprise-webhooks-global")!.limit).toMatchObject({ limit: 16, burst: 33, maxDelayMs: 1_000 });
  });

  it("prints a report's failures naming the requirement and its source, and a page escaping what it shows", () => {
    const report: CertificationReport = {
      version: 3, checksum: "a".repeat(64), mode: "ephemeral", target: null, instances: 2, startedAt: "2026-12-03T00:00:00.000Z", durationMs: 1_000, passed: false,
      results: [
        { requirement: "failureMode", subject: "pay", source: "requirements.operations[0]", expected: "fails closed", measured: "declared open", status: "fail" },
        { requirement: "boundary", subject: "<b>", source: "the algorithm", expected: "x", measured: "x", status: "pass" },
      ],
      scaled: [], notes: [],
    };
    expect(formatReportText(report)).toBe(
      "FAIL  failureMode (failure mode when Redis is down) — pay: expected fails closed, measured declared open; required by requirements.operations[0]\nNot certified: 1 failed, 1 passed. Policy v3: 1 passed, 1 failed, 0 not verified, in 1.0 s (ephemeral, 2 instances)\n",
    );
    expect(formatReportHtml(report)).toContain("&lt;b&gt;");
  });

  it("says 'not certified: N not verified' and why when nothing failed, never 'FAILED … 0 failed' (#29.8)", () => {
    const nv = (subject: string, measured: string) => ({ requirement: "boundary" as const, subject, source: "the algorithm", expected: "x", measured, status: "not_verified" as const });
    const report: CertificationReport = {
      version: 4, checksum: "b".repeat(64), mode: "ephemeral", target: null, instances: 1, startedAt: "2026-12-03T00:00:00.000Z", durationMs: 2_000, passed: false,
      results: [
        { requirement: "boundary", subject: "ok", source: "the algorithm", expected: "x", measured: "x", status: "pass" },
        nv("a", "the burst took 900 ms and crossed a window edge"), nv("b", "the burst took 900 ms and crossed a window edge"), nv("c", "Retry-After 60 s is past the time budget"), nv("d", "Retry-After 60 s is past the time budget"),
      ],
      scaled: [], notes: [],
    };
    const verdict = verdictText(report);
    expect(verdict).toBe(
      "Not certified: 4 not verified (nothing failed, 1 passed) — the run could not tell: the burst took 900 ms and crossed a window edge; Retry-After 60 s is past the time budget. Run again with more time (--max-seconds) or against a quieter target.",
    );
    expect(formatReportText(report)).not.toMatch(/FAILED|0 failed,? *$/m);
    expect(formatReportText(report)).toContain(verdict);
    expect(formatReportHtml(report)).toContain("Not certified: 4 not verified");
    expect(verdictText({ ...report, passed: true, results: [report.results[0]!] })).toBe("Certified: all 1 requirement checks passed.");
  });

  it("a failed accuracy requirement names the remedy it measured, in the text, the HTML and the JSON (#29.8)", () => {
    const report: CertificationReport = {
      version: 5, checksum: "c".repeat(64), mode: "ephemeral", target: null, instances: 1, startedAt: "2026-12-03T00:00:00.000Z", durationMs: 3_000, passed: false,
      results: [
        { requirement: "accuracy", subject: "free-api_key", source: "requirements.limits[0]", expected: "within 5.0% of an exact log at 1.6× the limit", measured: "57 admitted vs 52 by the exact log (9.6%), windows 2–10", status: "fail", remedy: "precision: 6 (3.9% on the same arrivals; as is 11.8%)" },
      ],
      scaled: [], notes: [],
    };
    expect(formatReportText(report)).toContain("(9.6%), windows 2–10; required by requirements.limits[0]; remedy: precision: 6 (3.9% on the same arrivals; as is 11.8%)");
    expect(formatReportHtml(report)).toContain("Remedy: precision: 6");
    expect(JSON.parse(JSON.stringify(report)).results[0].remedy).toBe("precision: 6 (3.9% on the same arrivals; as is 11.8%)");
  });
});

/**
 * `sluice certify` reports as the UI shows them (docs/proving.md): on each
 * policy version, the latest report's pass / fail per requirement; one report whole, with its
 * readable page. Reports are read back through a schema, so a malformed row shows as such rather
 * than breaking the version history.
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import { findCertificationReport, latestReportsWithResults } from "../../db/certify-repo";
import { REQUIREMENT_KINDS, REQUIREMENT_TITLES, summarize, type RequirementKind, type RequirementResult, type ResultStatus } from "../certify/report";
import { ServiceError } from "../errors";

const resultSchema = z.object({
  requirement: z.enum(REQUIREMENT_KINDS),
  subject: z.string(),
  source: z.string(),
  expected: z.string(),
  measured: z.string(),
  status: z.enum(["pass", "fail", "not_verified"]),
  note: z.string().optional(),
  remedy: z.string().optional(),
});
const reportSchema = z.object({
  version: z.number(),
  durationMs: z.number(),
  passed: z.boolean(),
  results: z.array(resultSchema),
  scaled: z.array(z.object({ subject: z.string(), from: z.string(), to: z.string() })).default([]),
  notes: z.array(z.string()).default([]),
});

export interface RequirementSummary {
  requirement: RequirementKind;
  title: string;
  /** fail if any subject failed, else not_verified if any was not verified, else pass. */
  status: ResultStatus;
  pass: number;
  fail: number;
  notVerified: number;
  /** The subjects that did not pass, e.g. `free-api_key`. */
  failing: string[];
}

export interface CertificationSummary {
  id: string;
  version: number;
  createdAt: Date;
  passed: boolean;
  mode: string;
  target: string | null;
  instances: number;
  counts: Record<ResultStatus, number>;
  requirements: RequirementSummary[];
  /** Set when the stored report does not read back. */
  unreadable: boolean;
}

export function summarizeRequirements(results: readonly RequirementResult[]): RequirementSummary[] {
  return REQUIREMENT_KINDS.flatMap((kind) => {
    const of = results.filter((r) => r.requirement === kind);
    if (of.length === 0) return [];
    const s = summarize(of);
    return [
      {
        requirement: kind,
        title: REQUIREMENT_TITLES[kind],
        status: s.fail > 0 ? "fail" : s.not_verified > 0 ? "not_verified" : "pass",
        pass: s.pass,
        fail: s.fail,
        notVerified: s.not_verified,
        failing: of.filter((r) => r.status !== "pass").map((r) => r.subject),
      } satisfies RequirementSummary,
    ];
  });
}

/** The latest certification of each version that has one. */
export async function certificationsOf(db: Db, versions: readonly number[]): Promise<Map<number, CertificationSummary>> {
  const rows = await latestReportsWithResults(db, versions);
  const out = new Map<number, CertificationSummary>();
  for (const row of rows) {
    const parsed = reportSchema.safeParse(row.report);
    const results = parsed.success ? parsed.data.results : [];
    out.set(row.version, {
      id: row.id,
      version: row.version,
      createdAt: row.createdAt,
      passed: row.passed,
      mode: row.mode,
      target: row.target,
      instances: row.instances,
      counts: summarize(results),
      requirements: summarizeRequirements(results),
      unreadable: !parsed.success,
    });
  }
  return out;
}

export const certificationIdSchema = z.string().regex(/^cert_[0-9a-f]{20}$/, { error: "expected a certification report id (cert_…)" });

function parseId(id: string): string {
  const parsed = certificationIdSchema.safeParse(id);
  if (!parsed.success) throw new ServiceError("not_found", `no certification report ${JSON.stringify(id.slice(0, 40))}`, { field: "id" });
  return parsed.data;
}

/** One report whole, for its page. not_found for an unknown or malformed id. */
export async function readCertification(db: Db, id: string) {
  const row = await findCertificationReport(db, parseId(id));
  if (!row) throw new ServiceError("not_found", `no certification report ${id}`, { field: "id" });
  const parsed = reportSchema.safeParse(row.report);
  if (!parsed.success) throw new ServiceError("conflict", `certification report ${id} does not read back: ${parsed.error.issues[0]?.message}`);
  return { id: row.id, version: row.version, createdAt: row.createdAt, passed: row.passed, mode: row.mode, target: row.target, instances: row.instances, report: parsed.data, raw: row.report, html: row.html };
}

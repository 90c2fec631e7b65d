/**
 * The certification report: one result per requirement and subject (a limit, an operation), its
 * JSON form (stored with the policy version, shown by the UI) and a readable standalone page.
 */
export const REQUIREMENT_KINDS = ["boundary", "boundaryBurst", "underLimit", "accuracy", "instances", "retryAfter", "rejectP95", "failureMode"] as const;
export type RequirementKind = (typeof REQUIREMENT_KINDS)[number];

export const REQUIREMENT_TITLES: Record<RequirementKind, string> = {
  boundary: "N-th allowed, N+1-th rejected",
  boundaryBurst: "burst at a window edge",
  underLimit: "under the limit, never denied",
  accuracy: "admissions within tolerance of an exact log",
  instances: "exactly the limit across instances",
  retryAfter: "Retry-After is honest",
  rejectP95: "reject-path p95",
  failureMode: "failure mode when Redis is down",
};

export type ResultStatus = "pass" | "fail" | "not_verified";

export interface RequirementResult {
  requirement: RequirementKind;
  /** The limit (`free-api_key`) or operation (`export`, `*`) it is about. */
  subject: string;
  /** Where the requirement comes from: `requirements.operations[0]`, `default`, or `the algorithm`. */
  source: string;
  expected: string;
  measured: string;
  status: ResultStatus;
  /** Scaling, caveats. */
  note?: string;
  /** A failed requirement: the change that would meet it, as measured (an accuracy failure: `precision: 6 (…)`). */
  remedy?: string;
}

export interface CertificationReport {
  version: number;
  checksum: string;
  mode: "ephemeral" | "target";
  target: string | null;
  instances: number;
  startedAt: string;
  durationMs: number;
  passed: boolean;
  results: RequirementResult[];
  /** Cells certified at a smaller scale: limit → `from` → `to`. */
  scaled: { subject: string; from: string; to: string }[];
  notes: string[];
}

export function summarize(results: readonly RequirementResult[]): Record<ResultStatus, number> {
  const out: Record<ResultStatus, number> = { pass: 0, fail: 0, not_verified: 0 };
  for (const r of results) out[r.status]++;
  return out;
}

/**
 * The verdict in words, the same in the CLI, the HTML report and the page. Not verified is not
 * failed: a run with no failure but unverified requirements is "not certified" and says why (the
 * distinct reasons the scenarios gave), never "FAILED … 0 failed".
 */
export function verdictText(report: Pick<CertificationReport, "passed" | "results">): string {
  const s = summarize(report.results);
  if (report.passed) return `Certified: all ${s.pass} requirement checks passed.`;
  if (s.fail > 0) {
    return `Not certified: ${s.fail} failed${s.not_verified ? `, ${s.not_verified} not verified` : ""}, ${s.pass} passed.`;
  }
  if (s.not_verified === 0) return "Not certified: nothing was checked.";
  const why = [...new Set(report.results.filter((r) => r.status === "not_verified").map((r) => r.measured))];
  const shown = why.slice(0, 3).join("; ");
  return `Not certified: ${s.not_verified} not verified (nothing failed, ${s.pass} passed) — the run could not tell: ${shown}${why.length > 3 ? `; and ${why.length - 3} more` : ""}. Run again with more time (--max-seconds) or against a quieter target.`;
}

/** The lines `sluice certify` prints at the end: every failure (naming the requirement), then the totals. */
export function formatReportText(report: CertificationReport): string {
  const s = summarize(report.results);
  const lines: string[] = [];
  for (const r of report.results.filter((x) => x.status !== "pass")) {
    lines.push(`${r.status === "fail" ? "FAIL" : "NOT VERIFIED"}  ${r.requirement} (${REQUIREMENT_TITLES[r.requirement]}) — ${r.subject}: expected ${r.expected}, measured ${r.measured}; required by ${r.source}${r.note ? ` (${r.note})` : ""}${r.remedy ? `; remedy: ${r.remedy}` : ""}`);
  }
  lines.push(
    `${verdictText(report)} Policy v${report.version}: ${s.pass} passed, ${s.fail} failed, ${s.not_verified} not verified, in ${(report.durationMs / 1000).toFixed(1)} s (${report.mode}${report.target ? ` ${report.target}` : ""}, ${report.instances} instance${report.instances === 1 ? "" : "s"})`,
  );
  return `${lines.join("\n")}\n`;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/** A standalone HTML page of the report (no scripts, inline style). */
export function formatReportHtml(report: CertificationReport): string {
  const rows = report.results
    .map(
      (r) =>
        `<tr class="${r.status}"><td>${esc(r.status === "not_verified" ? "not verified" : r.status)}</td><td>${esc(REQUIREMENT_TITLES[r.requirement])}</td><td>${esc(r.subject)}</td><td>${esc(r.expected)}</td><td>${esc(r.measured)}</td><td>${esc(r.source)}</td><td>${esc([r.note, r.remedy ? `Remedy: ${r.remedy}` : ""].filter(Boolean).join(" "))}</td></tr>`,
    )
    .join("\n");
  const scaled = report.scaled.map((x) => `<li>${esc(x.subject)}: ${esc(x.from)} certified as ${esc(x.to)}</li>`).join("");
  const notes = report.notes.map((n) => `<li>${esc(n)}</li>`).join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Certification of policy v${report.version}</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem;color:#0f172a}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e2e8f0;padding:4px 8px;text-align:left;vertical-align:top}
tr.fail td:first-child{color:#b91c1c;font-weight:600}tr.pass td:first-child{color:#15803d}tr.not_verified td:first-child{color:#b45309}.verdict{font-size:1.25rem;font-weight:600}</style></head>
<body><h1>Certification of policy v${report.version}</h1>
<p class="verdict">${esc(verdictText(report))}</p>
<p>Checksum ${esc(report.checksum.slice(0, 12))} · ${esc(report.mode)}${report.target ? ` ${esc(report.target)}` : ""} · ${report.instances} instance(s) · started ${esc(report.startedAt)} · ${(report.durationMs / 1000).toFixed(1)} s</p>
<table><thead><tr><th>Result</th><th>Requirement</th><th>Subject</th><th>Expected</th><th>Measured</th><th>Required by</th><th>Note</th></tr></thead><tbody>
${rows}
</tbody></table>
${scaled ? `<h2>Time-compressed</h2><ul>${scaled}</ul>` : ""}
${notes ? `<h2>Notes</h2><ul>${notes}</ul>` : ""}
</body></html>
`;
}

/**
 * A policy version's certification (in the version history on /policy): the latest
 * `sluice certify` report's verdict and pass / fail per requirement, linking to the report.
 */
import Link from "next/link";
import type { CertificationSummary } from "@/lib/services/justify/certification-view";

const STATUS_STYLE = { pass: "text-green-700", fail: "text-red-700", not_verified: "text-amber-700" } as const;
const STATUS_TEXT = { pass: "pass", fail: "fail", not_verified: "not verified" } as const;

export function CertificationCell({ version, certification }: { version: number; certification: CertificationSummary | undefined }) {
  if (!certification) {
    return (
      <span className="text-xs text-slate-500" data-testid={`certification-v${version}`} title={`Run: sluice certify --version ${version}`}>
        not certified
      </span>
    );
  }
  const c = certification;
  return (
    <details className="text-xs" data-testid={`certification-v${version}`}>
      <summary className="cursor-pointer">
        <span className={`badge ${c.passed ? "bg-green-100 text-green-800" : "bg-red-100 text-red-800"}`}>{c.passed ? "certified" : "failed"}</span>{" "}
        <span className="text-slate-600">
          {c.counts.pass} pass · {c.counts.fail} fail{c.counts.not_verified ? ` · ${c.counts.not_verified} not verified` : ""}
        </span>
      </summary>
      <ul className="mt-1 flex flex-col gap-0.5" data-testid="certification-requirements">
        {c.unreadable && <li className="text-amber-700">the stored report does not read back</li>}
        {c.requirements.map((r) => (
          <li key={r.requirement} data-testid="certification-requirement" data-status={r.status}>
            <span className={`font-medium ${STATUS_STYLE[r.status]}`}>{STATUS_TEXT[r.status]}</span> {r.title}
            <span className="text-slate-500">
              {" "}
              ({r.pass}/{r.pass + r.fail + r.notVerified})
            </span>
            {r.failing.length > 0 && <span className="text-slate-600"> — {r.failing.slice(0, 4).join(", ")}{r.failing.length > 4 ? ", …" : ""}</span>}
          </li>
        ))}
      </ul>
      <p className="mt-1">
        <Link className="text-indigo-700 hover:underline" href={`/certify/${c.id}`}>
          Report of {c.createdAt.toISOString().slice(0, 16).replace("T", " ")} UTC ({c.mode}, {c.instances} instance{c.instances === 1 ? "" : "s"})
        </Link>
      </p>
    </details>
  );
}

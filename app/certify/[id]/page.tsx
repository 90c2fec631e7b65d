import Link from "next/link";
import { notFound } from "next/navigation";
import { Forbidden, formatTime, PageHeader } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readCertification } from "@/lib/services/justify/certification-view";
import { REQUIREMENT_TITLES, verdictText } from "@/lib/services/certify/report";
import { ServiceError } from "@/lib/services/errors";

export const metadata = { title: "Certification · Sluice" };
export const dynamic = "force-dynamic";

const STATUS_STYLE = { pass: "text-green-700", fail: "text-red-700 font-semibold", not_verified: "text-amber-700" } as const;

export default async function CertificationPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const { principal, allowed } = await pageAccess("policy.read", `/certify/${encodeURIComponent(id)}`);
  if (!allowed) return <Forbidden role={principal.role} what="read the policy" />;
  let c: Awaited<ReturnType<typeof readCertification>>;
  try {
    c = await readCertification(db(), id);
  } catch (error) {
    if (error instanceof ServiceError && error.code === "not_found") notFound();
    throw error;
  }
  const r = c.report;
  return (
    <>
      <PageHeader
        title={`Certification of policy v${c.version}`}
        description={`sluice certify, ${c.mode}${c.target ? ` against ${c.target}` : ""}, ${c.instances} instance${c.instances === 1 ? "" : "s"}, ${formatTime(c.createdAt)}, ${(r.durationMs / 1000).toFixed(1)} s.`}
        actions={
          <>
            <a className="btn" href={`/certify/${c.id}/report`} data-testid="certification-readable">
              Readable report
            </a>
            <a className="btn" href={`/certify/${c.id}/report?format=json`}>
              JSON
            </a>
          </>
        }
      />
      <p
        className={`card mb-4 text-sm ${c.passed ? "border-green-300 bg-green-50" : r.results.some((x) => x.status === "fail") ? "border-red-300 bg-red-50" : "border-amber-300 bg-amber-50"}`}
        data-testid="certification-verdict"
      >
        {verdictText(r)} <Link className="text-indigo-700 hover:underline" href="/policy">Version history</Link>
      </p>
      <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
        <table className="table text-xs" data-testid="certification-results">
          <thead>
            <tr>
              <th>result</th>
              <th>requirement</th>
              <th>subject</th>
              <th>expected</th>
              <th>measured</th>
              <th>required by</th>
              <th>note</th>
            </tr>
          </thead>
          <tbody>
            {r.results.map((x, i) => (
              <tr key={i} data-status={x.status}>
                <td className={STATUS_STYLE[x.status]}>{x.status === "not_verified" ? "not verified" : x.status}</td>
                <td>{REQUIREMENT_TITLES[x.requirement]}</td>
                <td className="font-mono">{x.subject}</td>
                <td>{x.expected}</td>
                <td>{x.measured}</td>
                <td className="font-mono">{x.source}</td>
                <td className="text-slate-600">
                  {x.note ?? ""}
                  {x.remedy && <span className="block font-medium text-slate-900" data-testid="certification-remedy">Remedy: {x.remedy}</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {(r.scaled.length > 0 || r.notes.length > 0) && (
        <ul className="mt-4 list-disc pl-5 text-xs text-slate-600">
          {r.scaled.map((s) => (
            <li key={s.subject}>
              {s.subject}: {s.from} certified as {s.to} (time-compressed)
            </li>
          ))}
          {r.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </>
  );
}

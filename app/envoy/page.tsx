import Link from "next/link";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readEnvoyOverview, type EnvoyDomainState } from "@/lib/services/policy/envoy-view";

export const metadata = { title: "Envoy · Sluice" };

const STATE_STYLE: Record<EnvoyDomainState, string> = {
  unchanged: "bg-slate-100 text-slate-700",
  changed: "bg-amber-100 text-amber-800",
  "new in the draft": "bg-green-100 text-green-800",
  "removed in the draft": "bg-red-100 text-red-800",
  "not published": "bg-slate-100 text-slate-700",
};

export default async function EnvoyPage() {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/envoy"], "/envoy");
  if (!allowed) return <Forbidden role={principal.role} what="read the policy" />;
  const view = await readEnvoyOverview(db());
  const settings = view.settings.draft ?? view.settings.live;
  return (
    <>
      <PageHeader
        title="Envoy rate limit service"
        description={
          <>
            Domains of envoyproxy/ratelimit&apos;s configuration, answered by Sluice over Envoy&apos;s rate limit protocol. They are part of the policy: import them with{" "}
            <code className="font-mono">sluice import envoy</code>, change them in the policy file, publish and roll back with the rest. Read-only here.
          </>
        }
      />
      {view.issues.length > 0 && (
        <p className="card mb-4 border-red-300 bg-red-50 text-sm text-red-800" role="alert">
          The draft does not compile; this page shows the live version. See the Policy page for its errors.
        </p>
      )}
      <Section
        title={`Domains (${view.domains.length})`}
        description={view.liveVersion === null ? "Nothing is published yet: these are the draft's." : `The draft's domains, compared with live v${view.liveVersion}.`}
      >
        {view.domains.length === 0 ? (
          <EmptyState title="No Envoy domain in the policy">
            Import an envoyproxy/ratelimit configuration into an export of the policy, then apply it:{" "}
            <code className="font-mono">sluice export &gt; policy.yaml; sluice import envoy config/ --into policy.yaml &gt; new.yaml; sluice apply -f new.yaml</code>
          </EmptyState>
        ) : (
          <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
            <table className="table" data-testid="envoy-domains">
              <thead>
                <tr>
                  <th>Domain</th>
                  <th>Rules</th>
                  <th>Draft vs live</th>
                </tr>
              </thead>
              <tbody>
                {view.domains.map((d) => (
                  <tr key={d.domain}>
                    <td className="font-mono">
                      <Link className="text-indigo-700 hover:underline" href={`/envoy/${encodeURIComponent(d.domain)}`}>
                        {d.domain}
                      </Link>
                    </td>
                    <td>{d.rules}</td>
                    <td>
                      <span className={`badge ${STATE_STYLE[d.state]}`}>{d.state}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>
      {settings && (
        <Section title="Settings">
          <ul className="card flex flex-col gap-1 text-sm" data-testid="envoy-settings">
            <li>
              A domain the policy does not have answers <strong>{settings.unknownDomain === "ok" ? "OK (as envoyproxy/ratelimit does)" : "an error"}</strong>.
            </li>
            <li>Global shadow mode is <strong>{settings.shadowMode ? "on: every answer is OK, while counting" : "off"}</strong>.</li>
          </ul>
        </Section>
      )}
    </>
  );
}

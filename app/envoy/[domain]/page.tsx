import Link from "next/link";
import { notFound } from "next/navigation";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import type { EnvoyRuleLine } from "@/lib/policy/envoy/describe";
import { readEnvoyDomain } from "@/lib/services/policy/envoy-view";

export const metadata = { title: "Envoy domain · Sluice" };

const KIND_STYLE = { added: "bg-green-100 text-green-800", changed: "bg-amber-100 text-amber-800", removed: "bg-red-100 text-red-800" } as const;

/** The tree: one line per descriptor, indented by depth, each rule as a sentence. */
function Tree({ lines, testId }: { lines: EnvoyRuleLine[]; testId: string }) {
  if (lines.length === 0) return <EmptyState title="No descriptors">Every request of this domain passes without a limit.</EmptyState>;
  return (
    <ul className="card flex flex-col gap-1 text-sm" data-testid={testId}>
      {lines.map((l) => (
        <li key={l.key} className={`break-words ${l.rule ? "" : "text-slate-500"}`} style={{ paddingLeft: `${l.depth * 1.25}rem` }}>
          {l.depth > 0 && <span className="text-slate-400">└ </span>}
          <span className="font-mono">{l.selector}</span>: {l.text}
        </li>
      ))}
    </ul>
  );
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export default async function EnvoyDomainPage({ params }: { params: Promise<{ domain: string }> }) {
  const { domain: raw } = await params;
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/envoy"], `/envoy/${raw}`);
  if (!allowed) return <Forbidden role={principal.role} what="read the policy" />;
  // Whether the segment arrives encoded or not, a domain is found by either spelling.
  const view = (await readEnvoyDomain(db(), decodeSegment(raw))) ?? (await readEnvoyDomain(db(), raw));
  if (!view) notFound();
  const domain = view.domain;
  return (
    <>
      <p className="mb-2 text-sm">
        <Link href="/envoy" className="text-indigo-700 hover:underline">
          ← Envoy
        </Link>
      </p>
      <PageHeader
        title={domain}
        description="An Envoy rate limit domain: each request descriptor is matched level by level (a value before a wildcard before the key alone), and the rule of the level its last entry reaches applies."
      />
      {view.changes.length > 0 && (
        <Section title={view.liveVersion === null ? "Not published yet" : `Publishing changes (against live v${view.liveVersion})`}>
          <ul className="card flex flex-col gap-1.5 text-sm" data-testid="envoy-domain-changes">
            {view.changes.map((c, k) => (
              <li key={k} className="flex items-start gap-2">
                <span className={`badge ${KIND_STYLE[c.kind]} w-20 shrink-0 justify-center`}>{c.kind}</span>
                <span className="min-w-0 flex-1 break-words">{c.text}</span>
              </li>
            ))}
          </ul>
        </Section>
      )}
      {view.draft ? (
        <Section title="Draft" description={view.changes.length === 0 && view.liveVersion !== null ? `Equal to live v${view.liveVersion}.` : undefined}>
          <Tree lines={view.draft} testId="envoy-tree" />
        </Section>
      ) : (
        <p className="card mb-6 text-sm text-slate-700">
          {view.draftCompiles ? "The draft does not have this domain: publishing removes it." : "The draft does not compile (see the Policy page); the live version is below."}
        </p>
      )}
      {view.live && !view.draftCompiles && (
        <Section title={`Live v${view.liveVersion}`}>
          <Tree lines={view.live} testId="envoy-live-tree" />
        </Section>
      )}
      {view.live && view.changes.length > 0 && (
        <Section title={`Live v${view.liveVersion}`}>
          <Tree lines={view.live} testId="envoy-live-tree" />
        </Section>
      )}
    </>
  );
}

import Link from "next/link";
import { ReplayPanel } from "../justify/replay-panel";
import { CertificationCell } from "../certify/certification-cell";
import { diffPolicies, type DiffLine } from "@/lib/policy/policy-diff";
import { DiscardDraftButton, PublishPanel, RollbackButton } from "@/components/publish-panel";
import { ActorId, EmptyState, Forbidden, formatTime, PageHeader, Section } from "@/components/ui";
import { PolicyYamlLinks } from "@/components/policy-yaml-links";
import { ApplyPolicyFile } from "@/components/apply-policy-file";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listPolicyVersions } from "@/lib/db/ui-policy";
import { bodyOf } from "@/lib/policy/compile";
import { certificationsOf } from "@/lib/services/justify/certification-view";
import { readDraftState, readVersionPair } from "@/lib/services/policy/draft-view";
import { replayDraftAction } from "../justify/actions";
import { decideApprovalAction, discardDraftAction, publishAction, rollbackAction } from "./actions";
import { applyPolicyFileAction, previewPolicyFileAction } from "./file-actions";
import { RolloutPanel } from "@/components/rollout-panel";
import { rolloutStatus } from "@/lib/services/rollout/control-rollout";
import { rolloutAction, startRolloutAction } from "./rollout-actions";
import { ApprovalsPanel } from "@/components/approvals-panel";
import { actorOf } from "@/lib/auth/action";
import { listApprovals } from "@/lib/services/approval/decide-approval";
import { latestRolloutCharts } from "@/lib/services/rollout/rollout-charts";
import { RolloutChartsPanel } from "./rollout-charts";

export const metadata = { title: "Policy · Sluice" };

const KIND_STYLE = { added: "bg-green-100 text-green-800", changed: "bg-amber-100 text-amber-800", removed: "bg-red-100 text-red-800" } as const;

function DiffList({ lines, testId }: { lines: DiffLine[]; testId: string }) {
  return (
    <ul className="card flex flex-col gap-1.5 text-sm" data-testid={testId}>
      {lines.map((l, k) => (
        <li key={k} className="flex items-start gap-2">
          <span className={`badge ${KIND_STYLE[l.kind]} w-20 shrink-0 justify-center`}>{l.kind}</span>
          <span className="hidden w-20 shrink-0 pt-0.5 text-xs text-slate-500 sm:inline">{l.entity}</span>
          <span className="min-w-0 flex-1 break-words">{l.text}</span>
        </li>
      ))}
    </ul>
  );
}

/** `?version=N`: a positive integer, or null (anything else is ignored and said so). */
function parseVersionParam(raw: string | string[] | undefined): { version: number | null; invalid: boolean } {
  if (raw === undefined) return { version: null, invalid: false };
  const text = Array.isArray(raw) ? raw[0] : raw;
  return /^[1-9][0-9]{0,8}$/.test(text ?? "") ? { version: Number(text), invalid: false } : { version: null, invalid: true };
}

export default async function PolicyPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/policy"], "/policy");
  if (!allowed) return <Forbidden role={principal.role} what="read the policy" />;
  const canPublish = can(principal.role, "policy.publish");
  const canEdit = can(principal.role, "policy.edit");
  const selected = parseVersionParam((await searchParams).version);

  const [state, versions, pair, rollout, approvals, charts] = await Promise.all([
    readDraftState(db()),
    listPolicyVersions(db()),
    selected.version === null ? Promise.resolve(null) : readVersionPair(db(), selected.version),
    canPublish ? rolloutStatus({ db: db() }) : Promise.resolve(null),
    listApprovals({ db: db() }, { state: "pending" }),
    canPublish || can(principal.role, "usage.read") ? latestRolloutCharts(db()) : Promise.resolve(null),
  ]);
  const { draft, live } = state;
  const lines = draft ? diffPolicies(live ? bodyOf(live) : null, draft) : [];
  const certifications = await certificationsOf(db(), versions.map((v) => v.version));
  const change = pair ? { ...pair, changes: diffPolicies(pair.previous ? bodyOf(pair.previous) : null, bodyOf(pair.version)) } : null;
  const draftIssues = state.issues;

  return (
    <>
      <PageHeader
        title="Policy"
        description="The draft (what Tiers, Operations and Tenants edit) compiled and compared with the live version decision servers enforce. Publishing makes the draft live as a new version."
      />
      <PolicyYamlLinks liveVersion={live?.version ?? null} />
      {/* Always in place (it renders nothing without requests), so a decision's confirmation outlives the request it decided. */}
      <ApprovalsPanel approvals={approvals} me={actorOf(principal)} canDecide={canPublish} decide={decideApprovalAction} />
      {(selected.invalid || selected.version !== null) && (
        <Section
          title={change ? `What v${change.version.version} changed` : "Version not found"}
          description={
            change
              ? `v${change.version.version} against ${change.previous ? `v${change.previous.version}` : "nothing (the first version)"}, published by ${change.author} at ${formatTime(change.version.createdAt)}${change.note ? ` — “${change.note}”` : ""}${change.rolledBackFrom ? ` (a rollback to v${change.rolledBackFrom})` : ""}.`
              : undefined
          }
          actions={
            <Link href="/policy" className="text-sm text-indigo-700 hover:underline">
              Close
            </Link>
          }
        >
          {!change ? (
            <p className="card text-sm text-red-700" role="alert" data-testid="version-missing">
              {selected.invalid ? "version: expected a version number like ?version=3." : `There is no policy version ${selected.version}.`}
            </p>
          ) : change.changes.length === 0 ? (
            <EmptyState title="No change">This version&apos;s document equals the one before it.</EmptyState>
          ) : (
            <DiffList lines={change.changes} testId="version-diff" />
          )}
        </Section>
      )}
      <div className="grid grid-cols-1 gap-6 lg:grid-cols-3">
        <div className="lg:col-span-2">
          <Section title={live ? `Draft compared with live v${live.version}` : "Draft (nothing published yet)"}>
            {draftIssues.length > 0 ? (
              <div className="card border-red-300 bg-red-50" role="alert">
                <p className="font-medium text-red-800">The draft does not compile; publishing is blocked and the live version stays.</p>
                <ul className="mt-2 list-disc pl-5 text-sm text-red-800">
                  {draftIssues.map((i, k) => (
                    <li key={k}>
                      <span className="font-mono">{i.path}</span> {i.message}
                    </li>
                  ))}
                </ul>
              </div>
            ) : lines.length === 0 ? (
              <EmptyState title="The draft equals the live policy">Edit tiers, operations or tenants to prepare a change.</EmptyState>
            ) : (
              <DiffList lines={lines} testId="policy-diff" />
            )}
          </Section>
          {draft && live && can(principal.role, "usage.read") && <ReplayPanel replay={replayDraftAction} />}
          {canEdit && (
            <Section
              title="Apply a policy file"
              description="Make the draft hold exactly the policy of a file, as sluice apply -f does: what the file leaves out is deleted (API keys excepted). The dry run shows every change first; nothing is live until you publish."
            >
              <ApplyPolicyFile preview={previewPolicyFileAction} apply={applyPolicyFileAction} />
            </Section>
          )}
        </div>
        <div>
          <Section title="Publish">
            {canPublish ? (
              <>
                <PublishPanel
                  publish={publishAction}
                  changeCount={lines.length}
                  blocked={draftIssues.length ? "Fix the draft's errors first." : rollout && (rollout.state === "running" || rollout.state === "paused") ? `Rollout ${rollout.id} is ${rollout.state}: promote it to everyone or abort it below before publishing.` : null}
                />
                {canEdit && live && <DiscardDraftButton discard={discardDraftAction} changeCount={draftIssues.length ? 1 : lines.length} liveVersion={live.version} />}
                {live && <RolloutPanel rollout={rollout} start={startRolloutAction} act={rolloutAction} changeCount={draftIssues.length ? 0 : lines.length} />}
              </>
            ) : (
              <p className="card text-sm text-slate-700" data-testid="publish-forbidden">
                The {principal.role} role may read the policy but not publish it.
              </p>
            )}
          </Section>
        </div>
      </div>

      {charts && <RolloutChartsPanel charts={charts} />}

      <Section title="Version history" description="Every published version with who and when, and what it changed. Rolling back republishes an earlier document as a new version and resets the draft to it.">
        {versions.length === 0 ? (
          <EmptyState title="No version yet">Publish the draft to create version 1.</EmptyState>
        ) : (
          <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
            <table className="table" data-testid="versions-table">
              <thead>
                <tr>
                  <th>Version</th>
                  <th>Published by</th>
                  <th>When</th>
                  <th>Note</th>
                  <th>Certification</th>
                  <th>Change</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {versions.map((v, i) => (
                  <tr key={v.version}>
                    <td className="whitespace-nowrap font-medium">
                      v{v.version} {i === 0 && <span className="badge bg-green-100 text-green-800">live</span>}
                      <div className="font-mono text-xs font-normal text-slate-500" title="checksum of the compiled document">
                        {v.checksum.slice(0, 12)}
                      </div>
                    </td>
                    <td className="min-w-44">
                      <ActorId id={v.author} />
                    </td>
                    <td className="whitespace-nowrap">{formatTime(v.createdAt)}</td>
                    <td className="text-slate-600">
                      {v.note}
                      {v.rolledBackFrom ? <span className="text-xs"> (copy of v{v.rolledBackFrom})</span> : null}
                    </td>
                    <td><CertificationCell version={v.version} certification={certifications.get(v.version)} /></td>
                    <td>
                      <Link className="whitespace-nowrap text-indigo-700 hover:underline" href={`/policy?version=${v.version}`} data-testid={`version-diff-link-${v.version}`}>
                        diff vs {v.version > 1 ? `v${v.version - 1}` : "empty"}
                      </Link>
                    </td>
                    <td className="text-right">{canPublish && i > 0 ? <RollbackButton version={v.version} rollback={rollbackAction} /> : null}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>

      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        <details className="card">
          <summary className="cursor-pointer text-sm font-medium">Draft document (compiled JSON)</summary>
          <pre className="mt-2 max-h-96 overflow-auto font-mono text-xs" data-testid="draft-document">
            {draft ? JSON.stringify(draft, null, 2) : "does not compile"}
          </pre>
        </details>
        <details className="card">
          <summary className="cursor-pointer text-sm font-medium">Live document {live ? `v${live.version}` : ""}</summary>
          <pre className="mt-2 max-h-96 overflow-auto font-mono text-xs">{live ? JSON.stringify(live, null, 2) : "nothing published"}</pre>
        </details>
      </div>
    </>
  );
}

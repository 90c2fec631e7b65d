import { FailureModesPanel, type LiveFailureModes } from "@/components/failure-modes-panel";
import { MatchTester, OperationsEditor } from "@/components/operations-editor";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readDraftSpec } from "@/lib/db/ui-draft";
import { readTierMatrix } from "@/lib/db/ui-tiers";
import { bodyOf } from "@/lib/policy/compile";
import { specFromDocument } from "@/lib/policy/decompile";
import { readLivePolicy } from "@/lib/services/policy/draft-view";
import { applyFailureModesAction, deleteOperationAction, saveOperationAction, setOperationFailureModeAction } from "./actions";

export const metadata = { title: "Operations · Sluice" };

export default async function OperationsPage() {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/operations"], "/operations");
  if (!allowed) return <Forbidden role={principal.role} what="read operations" />;
  const [{ operations }, live, draftSpec] = await Promise.all([readTierMatrix(db()), readLivePolicy(db()), readDraftSpec(db())]);
  // Which live operations have their own mode, read back with the draft's spelling (lib/policy/decompile.ts).
  const liveSpec = live ? specFromDocument(bodyOf(live), draftSpec) : null;
  const liveModes: LiveFailureModes | null =
    live && liveSpec
      ? {
          version: live.version,
          default: live.defaults.failureMode,
          operations: liveSpec.operations.map((o) => ({ name: o.name, own: o.failureMode ?? null, effective: live.operations[o.name].failureMode })),
        }
      : null;
  const canEdit = can(principal.role, "policy.edit");
  const canSetFailure = can(principal.role, "failure_mode.set");
  return (
    <>
      <PageHeader
        title="Operations"
        description="An operation is a named class of requests, matched by METHOD /path patterns or called by name. Limits in the tier matrix refer to operations; the failure mode says what happens to it when Redis cannot answer."
      />
      <Section title="Failure modes (live)" description="The default and every operation's failure mode, as enforced now. Changes here take effect at once; they do not wait for the draft to be published.">
        {liveModes ? (
          <FailureModesPanel live={liveModes} canApply={canSetFailure} apply={applyFailureModesAction} />
        ) : (
          <EmptyState title="Nothing published yet">Publish the policy once; then failure modes can be applied to it here.</EmptyState>
        )}
      </Section>
      <Section title="Match tester" description="Resolves a request with the same matcher the decision server uses, against the draft's patterns.">
        <MatchTester operations={operations} />
      </Section>
      <Section title={`Operations (${operations.length})`}>
        {operations.length === 0 && !canEdit ? (
          <EmptyState title="No operations yet">Limits on * still apply to every request.</EmptyState>
        ) : (
          <OperationsEditor
            // Remounted when failure modes change (applied live above), so the forms show the draft as it is now.
            key={operations.map((o) => `${o.name}:${o.failureMode ?? ""}`).join(",")}
            operations={operations}
            canEdit={canEdit}
            // Failure modes are applied live in the panel above; the draft's editor offers them only to
            // those who also edit the draft (admin), so an SRE's change never stops in the draft.
            canSetFailure={canSetFailure && canEdit}
            save={saveOperationAction}
            remove={deleteOperationAction}
            setFailureMode={setOperationFailureModeAction}
          />
        )}
      </Section>
    </>
  );
}

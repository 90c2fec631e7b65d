import { MatchTester, OperationsEditor } from "@/components/operations-editor";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readTierMatrix } from "@/lib/db/ui-tiers";
import { deleteOperationAction, saveOperationAction, setOperationFailureModeAction } from "./actions";

export const metadata = { title: "Operations · Sluice" };

export default async function OperationsPage() {
  const { principal, allowed } = await pageAccess("policy.read", "/operations");
  if (!allowed) return <Forbidden role={principal.role} what="read operations" />;
  const { operations } = await readTierMatrix(db());
  const canEdit = can(principal.role, "policy.edit");
  const canSetFailure = can(principal.role, "failure_mode.set");
  return (
    <>
      <PageHeader
        title="Operations"
        description="An operation is a named class of requests, matched by METHOD /path patterns or called by name. Limits in the tier matrix refer to operations; the failure mode says what happens to it when Redis cannot answer."
      />
      <Section title="Match tester" description="Resolves a request with the same matcher the decision server uses, against the draft's patterns.">
        <MatchTester operations={operations} />
      </Section>
      <Section title={`Operations (${operations.length})`}>
        {operations.length === 0 && !canEdit ? (
          <EmptyState title="No operations yet">Limits on * still apply to every request.</EmptyState>
        ) : (
          <OperationsEditor
            operations={operations}
            canEdit={canEdit}
            canSetFailure={canSetFailure}
            save={saveOperationAction}
            remove={deleteOperationAction}
            setFailureMode={setOperationFailureModeAction}
          />
        )}
      </Section>
    </>
  );
}

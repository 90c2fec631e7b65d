import { CreateUserForm, FailureModeForm, TokensPanel, UsersTable } from "@/components/settings-forms";
import { PageHeader, Section } from "@/components/ui";
import { ACTION_LABELS, ACTIONS, can, PERMISSIONS } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listApiTokens, listUsers, readDefaultFailureMode } from "@/lib/db/ui-settings";
import { ROLES } from "@/lib/policy/types";
import { env } from "@/lib/env";
import { envServiceTokens } from "@/lib/services/env-tokens";
import {
  createTokenAction,
  createUserAction,
  revokeTokenAction,
  setDefaultFailureModeAction,
  setUserDisabledAction,
  unlockUserAction,
  setUserRoleAction,
} from "./actions";

export const metadata = { title: "Settings · Sluice" };

export default async function SettingsPage() {
  const { principal } = await pageAccess(PAGE_ACTIONS["/settings"], "/settings");
  const canUsers = can(principal.role, "users.manage");
  const canTokens = can(principal.role, "tokens.manage");
  const canFailure = can(principal.role, "failure_mode.set");
  const [users, tokens, failureMode] = await Promise.all([
    canUsers ? listUsers(db()) : Promise.resolve([]),
    canTokens ? listApiTokens(db()) : Promise.resolve([]),
    readDefaultFailureMode(db()),
  ]);
  return (
    <>
      <PageHeader title="Settings" description="Users and roles, tokens for the decision API and the admin API, and the default failure mode." />
      <Section title="Failure mode" description="What a decision does when Redis cannot answer in time.">
        <FailureModeForm current={failureMode} canSet={canFailure} save={setDefaultFailureModeAction} />
      </Section>
      {canUsers && (
        <Section title="Users" description="People who sign in to this control plane.">
          <div className="flex flex-col gap-3">
            <UsersTable
              selfId={principal.id}
              setRole={setUserRoleAction}
              setDisabled={setUserDisabledAction}
              unlock={unlockUserAction}
              users={users.map((u) => ({ ...u, createdAt: u.createdAt.toISOString(), disabledAt: u.disabledAt?.toISOString() ?? null }))}
            />
            <CreateUserForm create={createUserAction} />
          </div>
        </Section>
      )}
      {canTokens && (
        <Section title="Tokens" description="Stored as SHA-256 hashes and listed by prefix; a new token is shown once.">
          <TokensPanel
            envTokens={envServiceTokens(env().SLUICE_SERVICE_TOKENS)}
            create={createTokenAction}
            revoke={revokeTokenAction}
            tokens={tokens.map((t) => ({ ...t, createdAt: t.createdAt.toISOString(), lastUsedAt: t.lastUsedAt?.toISOString() ?? null, revokedAt: t.revokedAt?.toISOString() ?? null }))}
          />
        </Section>
      )}
      <Section title="Roles" description="What each role may do. Every page, server action and API route checks this on the server.">
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table" data-testid="roles-table">
            <thead>
              <tr>
                <th>Action</th>
                {ROLES.map((r) => (
                  <th key={r} className="text-center">
                    {r}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {ACTIONS.map((a) => (
                <tr key={a}>
                  <td>{ACTION_LABELS[a]}</td>
                  {ROLES.map((r) => (
                    <td key={r} className="text-center" aria-label={PERMISSIONS[r].has(a) ? "allowed" : "not allowed"}>
                      {PERMISSIONS[r].has(a) ? "✓" : "—"}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
    </>
  );
}

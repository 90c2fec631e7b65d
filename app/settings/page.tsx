import Link from "next/link";
import { CreateUserForm, TokensPanel, UsersTable } from "@/components/settings-forms";
import { PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { roleTableRows } from "@/lib/auth/role-table";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listUsers } from "@/lib/db/ui-settings";
import { ROLES } from "@/lib/policy/types";
import { readLivePolicy } from "@/lib/services/policy/draft-view";
import { listApiTokensWithUse } from "@/lib/services/access/api-token-use";
import { env } from "@/lib/env";
import { envServiceTokens } from "@/lib/services/access/env-tokens";
import {
  createTokenAction,
  createUserAction,
  revokeTokenAction,
  setUserDisabledAction,
  unlockUserAction,
  setUserRoleAction,
} from "./actions";
import { appRedis } from "../_lib/redis";

export const metadata = { title: "Settings · Sluice" };

export default async function SettingsPage() {
  const { principal } = await pageAccess(PAGE_ACTIONS["/settings"], "/settings");
  const canUsers = can(principal.role, "users.manage");
  const canTokens = can(principal.role, "tokens.manage");
  const canFailure = can(principal.role, "failure_mode.set");
  const [users, tokens, live] = await Promise.all([
    canUsers ? listUsers(db()) : Promise.resolve([]),
    canTokens ? listApiTokensWithUse({ db: db(), redis: appRedis() }) : Promise.resolve([]),
    readLivePolicy(db()),
  ]);
  return (
    <>
      <PageHeader title="Settings" description="Users and roles, tokens for the decision API and the admin API, and the default failure mode." />
      <Section title="Failure mode" description="What a decision does when Redis cannot answer in time.">
        {/* One control, live: Operations → Failure modes (live) applies it at once (#29 defect 6). */}
        <div className="card flex flex-wrap items-center gap-3 text-sm" data-testid="settings-failure-mode">
          <span>
            Default failure mode: <strong className="font-mono">{live?.defaults.failureMode ?? "not published yet"}</strong>
            {live ? ` (live v${live.version})` : ""}.
          </span>
          <Link className={canFailure ? "btn" : "link"} href="/operations#failure-modes">
            {canFailure ? "Change it live on Operations →" : "See every operation's on Operations →"}
          </Link>
        </div>
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
      <Section title="Roles" description="What each role may open and do. Every page, server action and API route checks this on the server.">
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table" data-testid="roles-table">
            <thead>
              <tr>
                <th>Page or action</th>
                {ROLES.map((r) => (
                  <th key={r} className="text-center">
                    {r}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {roleTableRows().map((row) => (
                <tr key={row.label}>
                  <td>{row.label}</td>
                  {ROLES.map((r) => (
                    <td key={r} className="text-center" aria-label={row.allowed[r] ? "allowed" : "not allowed"}>
                      {row.allowed[r] ? "✓" : "—"}
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

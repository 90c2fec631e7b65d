"use client";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { ROLES } from "@/lib/policy/types";
import type { Column } from "./data-table";
import { ShownOnce } from "./keys-panel";
import { SortableDataTable } from "./sortable-data-table";
import { formatTime } from "./ui";

type Act<T = undefined> = (input: unknown) => Promise<ActionResult<T>>;

function Status({ result }: { result: ActionResult<unknown> | null }) {
  if (!result) return null;
  return (
    <span role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-600"}`}>
      {result.message}
    </span>
  );
}

export function CreateUserForm({ create }: { create: Act }) {
  const [form, setForm] = useState({ email: "", name: "", password: "", role: "product" });
  const [result, setResult] = useState<ActionResult | null>(null);
  /** What was sent: a field's refusal ("email already in use") shows only while the field still holds it. */
  const [sent, setSent] = useState(form);
  const [pending, start] = useTransition();
  const err = (f: keyof typeof form) => (result && !result.ok && form[f] === sent[f] ? result.issues?.find((i) => i.path === f)?.message : undefined);
  return (
    <form
      className="card grid grid-cols-1 items-end gap-3 md:grid-cols-5"
      onSubmit={(e) => {
        e.preventDefault();
        setSent(form);
        start(async () => {
          const r = await create(form);
          setResult(r);
          if (r.ok) setForm({ email: "", name: "", password: "", role: "product" });
        });
      }}
    >
      {(["email", "name", "password"] as const).map((f) => (
        <div key={f}>
          <label className="label" htmlFor={`user-${f}`}>
            {f === "password" ? "Initial password (10+ characters)" : f === "name" ? "Name (optional)" : "Email"}
          </label>
          <input id={`user-${f}`} type={f === "password" ? "password" : f === "email" ? "email" : "text"} autoComplete="off" className="input" value={form[f]} onChange={(e) => setForm({ ...form, [f]: e.target.value })} aria-invalid={err(f) ? true : undefined} />
          {err(f) && <p className="field-error">{err(f)}</p>}
        </div>
      ))}
      <div>
        <label className="label" htmlFor="user-role">
          Role
        </label>
        <select id="user-role" className="input" value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value })}>
          {ROLES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
      </div>
      <div className="flex items-center gap-3">
        <button className="btn-primary" type="submit" disabled={pending}>
          {pending ? "Creating…" : "Create user"}
        </button>
      </div>
      <div className="col-span-full">{result?.ok ? <Status result={result} /> : result && !result.issues?.length ? <Status result={result} /> : null}</div>
    </form>
  );
}

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  role: string;
  createdAt: string;
  disabledAt: string | null;
}

const USER_COLUMNS: Column[] = [
  { key: "email", label: "Email" },
  { key: "name", label: "Name" },
  { key: "role", label: "Role" },
  { key: "createdAt", label: "Created", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "status", label: "Status" },
  { key: "actions", label: "", srLabel: "Actions", align: "right", sortable: false },
];

export function UsersTable({ users, selfId, setRole, setDisabled, unlock }: { users: UserRow[]; selfId: string; setRole: Act; setDisabled: Act; unlock: Act }) {
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="flex flex-col gap-2">
      <SortableDataTable
        testId="users-table"
        columns={USER_COLUMNS}
        rows={users.map((u) => ({
          key: u.id,
          className: u.disabledAt ? "text-slate-400" : undefined,
          values: { name: u.name, role: u.role, createdAt: new Date(u.createdAt) },
          cells: {
            email: u.email,
            name: u.name ?? "—",
            role: <RoleCell user={u} disabled={pending || u.id === selfId} onConfirm={(role) => start(async () => setResult(await setRole({ userId: u.id, role })))} />,
            createdAt: formatTime(u.createdAt),
            status: u.disabledAt ? "disabled" : "active",
            actions: u.id !== selfId && (
              <span className="inline-flex gap-2">
                <button type="button" className="btn" disabled={pending} title="Clear the failed sign-ins that lock this account" onClick={() => start(async () => setResult(await unlock({ userId: u.id })))}>
                  Unlock sign-in
                </button>
                <button type="button" className="btn" disabled={pending} onClick={() => {
                    if (!u.disabledAt && !window.confirm(`Disable ${u.email}? They are signed out at once and cannot sign in until enabled again.`)) return;
                    start(async () => setResult(await setDisabled({ userId: u.id, disabled: !u.disabledAt })));
                  }}>
                  {u.disabledAt ? "Enable" : "Disable"}
                </button>
              </span>
            ),
          },
        }))}
      />
      <Status result={result} />
    </div>
  );
}

/**
 * A user's role: choosing another one asks first ("Change … from product to billing?"), and only
 * Confirm applies it; Cancel (or Escape) puts the select back.
 */
function RoleCell({ user, disabled, onConfirm }: { user: UserRow; disabled: boolean; onConfirm: (role: string) => void }) {
  const [choice, setChoice] = useState(user.role);
  const [shownRole, setShownRole] = useState(user.role);
  if (shownRole !== user.role) {
    // The server's answer changed the role: follow it.
    setShownRole(user.role);
    setChoice(user.role);
  }
  const asking = choice !== user.role;
  return (
    <div className="flex flex-wrap items-center gap-2" onKeyDown={(e) => e.key === "Escape" && asking && setChoice(user.role)}>
      <label className="sr-only" htmlFor={`role-${user.id}`}>
        Role of {user.email}
      </label>
      <select id={`role-${user.id}`} className="input w-32" value={choice} disabled={disabled} onChange={(e) => setChoice(e.target.value)}>
        {ROLES.map((r) => (
          <option key={r}>{r}</option>
        ))}
      </select>
      {asking && (
        <span role="group" aria-label={`Confirm the role change of ${user.email}`} className="flex flex-wrap items-center gap-2 text-xs" data-testid={`confirm-role-${user.email}`}>
          <span>
            Change {user.email} from <strong>{user.role}</strong> to <strong>{choice}</strong>?
          </span>
          <button type="button" className="btn-primary" disabled={disabled} onClick={() => onConfirm(choice)}>
            Confirm
          </button>
          <button type="button" className="btn" onClick={() => setChoice(user.role)}>
            Cancel
          </button>
        </span>
      )}
    </div>
  );
}

export interface TokenRow {
  id: string;
  kind: string;
  name: string;
  prefix: string;
  role: string;
  createdBy: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const TOKEN_COLUMNS: Column[] = [
  { key: "kind", label: "Kind" },
  { key: "name", label: "Name" },
  { key: "prefix", label: "Prefix", className: "font-mono text-xs" },
  { key: "role", label: "Role" },
  { key: "createdAt", label: "Created", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "lastUsedAt", label: "Last used", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "actions", label: "", srLabel: "Actions", align: "right", sortable: false },
];

export function TokensPanel({
  tokens,
  envTokens = [],
  create,
  revoke,
}: {
  tokens: TokenRow[];
  /** Service tokens from SLUICE_SERVICE_TOKENS, by fingerprint (lib/services/access/env-tokens.ts). */
  envTokens?: { fingerprint: string; given: "plaintext" | "sha256" }[];
  create: Act<{ token: string; name: string }>;
  revoke: Act;
}) {
  const [kind, setKind] = useState<"service" | "admin">("service");
  const [name, setName] = useState("");
  const [role, setRole] = useState("admin");
  const [shown, setShown] = useState<{ token: string; name: string } | null>(null);
  const [result, setResult] = useState<ActionResult<unknown> | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="flex flex-col gap-3" data-testid="tokens">
      {shown && <ShownOnce label={`Token ${shown.name} created.`} secret={shown.token} onDismiss={() => setShown(null)} />}
      <form
        className="flex flex-wrap items-end gap-3"
        onSubmit={(e) => {
          e.preventDefault();
          start(async () => {
            const r = await create({ kind, name, role: kind === "admin" ? role : undefined });
            setResult(r);
            if (r.ok && r.data) {
              setShown(r.data);
              setName("");
            }
          });
        }}
      >
        <div>
          <label className="label" htmlFor="token-kind">
            Kind
          </label>
          <select id="token-kind" className="input" value={kind} onChange={(e) => setKind(e.target.value as "service" | "admin")}>
            <option value="service">service (decision API)</option>
            <option value="admin">admin (admin REST API)</option>
          </select>
        </div>
        <div>
          <label className="label" htmlFor="token-name">
            Name
          </label>
          <input id="token-name" className="input" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} placeholder="edge-gateway" />
        </div>
        {kind === "admin" && (
          <div>
            <label className="label" htmlFor="token-role">
              Role of the token
            </label>
            <select id="token-role" className="input" value={role} onChange={(e) => setRole(e.target.value)}>
              {ROLES.map((r) => (
                <option key={r}>{r}</option>
              ))}
            </select>
          </div>
        )}
        <button className="btn-primary" type="submit" disabled={pending}>
          {pending ? "Creating…" : "Create token"}
        </button>
        {result && !result.ok && <Status result={result} />}
      </form>
      <SortableDataTable
        testId="tokens-table"
        columns={TOKEN_COLUMNS}
        empty={<p className="rounded-lg border border-dashed border-slate-300 bg-white px-4 py-3 text-sm text-slate-600">No token yet. Gateways need a service token to call the decision API; scripts need an admin token for the REST API.</p>}
        rows={tokens.map((t) => ({
          key: t.id,
          className: t.revokedAt ? "text-slate-400" : undefined,
          values: { prefix: t.prefix, role: t.kind === "admin" ? t.role : null, createdAt: new Date(t.createdAt), lastUsedAt: t.lastUsedAt ? new Date(t.lastUsedAt) : null },
          cells: {
            kind: t.kind,
            name: t.name,
            prefix: `${t.prefix}…`,
            role: t.kind === "admin" ? t.role : "—",
            createdAt: (
              <>
                {formatTime(t.createdAt)}
                {t.createdBy && <div className="text-xs text-slate-500">{t.createdBy}</div>}
              </>
            ),
            lastUsedAt: formatTime(t.lastUsedAt),
            actions: t.revokedAt ? (
              "revoked"
            ) : (
              <button
                type="button"
                className="btn"
                disabled={pending}
                onClick={() => {
                  if (window.confirm(`Revoke ${t.kind} token ${t.name}?`)) start(async () => setResult(await revoke({ id: t.id })));
                }}
              >
                Revoke
              </button>
            ),
          },
        }))}
      />
      <div className="card text-sm" data-testid="env-tokens">
        <h3 className="font-semibold">Service tokens from the environment</h3>
        <p className="mt-1 text-xs text-slate-600">
          Given by <code className="font-mono">SLUICE_SERVICE_TOKENS</code> (comma-separated plaintexts or their sha256), read by every decision server that has the variable.
          They are not stored here and cannot be revoked here: remove them from the environment and restart. Listed by the first 12 hex characters of their SHA-256, never by the
          token itself.
        </p>
        {envTokens.length === 0 ? (
          <p className="mt-2 text-xs text-slate-500">This control plane’s environment sets none.</p>
        ) : (
          <ul className="mt-2 flex flex-col gap-1">
            {envTokens.map((t) => (
              <li key={t.fingerprint} className="text-xs">
                <span className="font-mono">sha256 {t.fingerprint}…</span> <span className="text-slate-500">service token, given as {t.given === "sha256" ? "its sha256" : "plaintext"}</span>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}


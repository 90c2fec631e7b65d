"use client";
import Link from "next/link";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import type { Column } from "./data-table";
import { SortableDataTable } from "./sortable-data-table";
import { formatTime } from "./ui";

export interface KeyRow {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  /** When the worker revokes it (a rotation's overlap); null: never. */
  expiresAt: string | null;
}

const KEY_COLUMNS: Column[] = [
  { key: "name", label: "Name", className: "font-medium" },
  { key: "prefix", label: "Prefix", className: "font-mono text-xs" },
  { key: "createdAt", label: "Created", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "status", label: "Status" },
  { key: "actions", label: "", srLabel: "Actions", align: "right", sortable: false },
];

/** The secret, shown once, with a copy button and a warning that it will not be shown again. */
export function ShownOnce({ label, secret, onDismiss }: { label: string; secret: string; onDismiss: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="card border-green-300 bg-green-50" role="status" data-testid="secret-shown-once">
      <p className="text-sm font-medium text-green-900">{label} Copy it now: it is stored hashed and will never be shown again.</p>
      <div className="mt-2 flex items-center gap-2">
        <code className="flex-1 rounded border border-green-200 bg-white px-2 py-1.5 font-mono text-sm break-all" data-testid="secret-value">
          {secret}
        </code>
        <button
          type="button"
          className="btn"
          onClick={() => {
            void navigator.clipboard?.writeText(secret).then(() => setCopied(true));
          }}
        >
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" className="btn" onClick={onDismiss}>
          Done
        </button>
      </div>
    </div>
  );
}

export function KeysPanel({
  slug,
  keys,
  canManage,
  create,
  revoke,
}: {
  slug: string;
  keys: KeyRow[];
  canManage: boolean;
  create: (input: unknown) => Promise<ActionResult<{ key: string; prefix: string; name: string }>>;
  revoke: (input: unknown) => Promise<ActionResult>;
}) {
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null);
  const [result, setResult] = useState<ActionResult<unknown> | null>(null);
  /** The name last sent: the server's "name taken" is shown only while the field still holds it. */
  const [sentName, setSentName] = useState<string | null>(null);
  const [pending, start] = useTransition();
  const nameError =
    name && !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)
      ? "lowercase letters, digits, - and _ (at most 63)"
      : result && !result.ok && name === sentName
        ? result.issues?.find((i) => i.path === "name")?.message
        : undefined;
  return (
    <div className="flex flex-col gap-3" data-testid="keys">
      {created && <ShownOnce label={`API key ${created.name} created.`} secret={created.key} onDismiss={() => setCreated(null)} />}
      {canManage && (
        <form
          className="flex flex-wrap items-end gap-3"
          onSubmit={(e) => {
            e.preventDefault();
            setSentName(name);
            start(async () => {
              const r = await create({ slug, name: name || undefined });
              setResult(r);
              if (r.ok && r.data) {
                setCreated({ key: r.data.key, name: r.data.name });
                setName("");
              }
            });
          }}
        >
          <div>
            <label htmlFor="key-name" className="label">
              New key name (optional)
            </label>
            <input id="key-name" className="input w-56" value={name} onChange={(e) => setName(e.target.value)} placeholder="ci" aria-invalid={nameError ? true : undefined} />
            {nameError && <p className="field-error">{nameError}</p>}
          </div>
          <button type="submit" className="btn-primary" disabled={pending || Boolean(nameError)}>
            {pending ? "Creating…" : "Create API key"}
          </button>
          {result && !result.ok && !nameError && name === sentName && (
            <span role="alert" className="text-sm text-red-600">
              {result.message}
            </span>
          )}
        </form>
      )}
      <SortableDataTable
        testId="keys-table"
        columns={KEY_COLUMNS}
        empty={
          <p className="rounded-lg border border-dashed border-slate-300 bg-white px-4 py-3 text-sm text-slate-600">
            No API key yet. {canManage ? "Create one above; its clients send it to your gateway, which asks Sluice." : "A product manager or admin can create one."}
          </p>
        }
        rows={keys.map((k) => ({
          key: k.id,
          className: k.revokedAt ? "text-slate-400" : undefined,
          values: { name: k.name, prefix: k.prefix, createdAt: new Date(k.createdAt), status: k.revokedAt ? "revoked" : k.expiresAt ? "expiring" : "active" },
          cells: {
            name: (
              <Link href={`/tenants/${slug}/keys/${k.id}`} className="text-indigo-700 hover:underline">
                {k.name}
              </Link>
            ),
            prefix: `${k.prefix}…`,
            createdAt: formatTime(k.createdAt),
            status: k.revokedAt ? (
              `revoked ${formatTime(k.revokedAt)}`
            ) : k.expiresAt ? (
              <span className="badge bg-amber-100 text-amber-800">expires {formatTime(k.expiresAt)}</span>
            ) : (
              <span className="badge bg-green-100 text-green-800">active</span>
            ),
            actions: canManage && !k.revokedAt && (
              <button
                type="button"
                className="btn"
                disabled={pending}
                onClick={() => {
                  if (!window.confirm(`Revoke key ${k.name} (${k.prefix}…)? Its clients are refused immediately.`)) return;
                  start(async () => setResult(await revoke({ slug, name: k.name })));
                }}
              >
                Revoke
              </button>
            ),
          },
        }))}
      />
    </div>
  );
}

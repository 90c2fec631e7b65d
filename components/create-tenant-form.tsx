"use client";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { plainMessage } from "@/lib/policy/plain-messages";

const LABELS = { slug: "Tenant slug", name: "Name", tier: "Tier" } as const;

/** The Tenants page's "New tenant": slug, name and tier; then its own page for keys and overrides. */
export function CreateTenantForm({ tiers, create }: { tiers: string[]; create: (input: unknown) => Promise<ActionResult<{ slug: string }>> }) {
  const router = useRouter();
  const [form, setForm] = useState({ slug: "", name: "", tier: tiers[0] ?? "" });
  const [sent, setSent] = useState(form);
  const [result, setResult] = useState<ActionResult<{ slug: string }> | null>(null);
  const [pending, start] = useTransition();
  // A refusal is shown against a field only while the field still holds what was sent.
  const err = (f: keyof typeof form) => {
    if (!result || result.ok || form[f] !== sent[f]) return undefined;
    const issue = result.issues?.find((i) => i.path.split(".").pop() === f);
    // Under its own field, without its label again ("acme is already taken").
    return issue ? plainMessage(issue.message.replace(`${LABELS[f]}: `, "").replace(`${f}: `, "")) : undefined;
  };
  const general = result && !result.ok && !(["slug", "name", "tier"] as const).some((f) => err(f)) && JSON.stringify(form) === JSON.stringify(sent) ? result.message : null;
  return (
    <form
      className="card mb-4 grid grid-cols-1 items-end gap-3 sm:grid-cols-4"
      data-testid="create-tenant"
      onSubmit={(e) => {
        e.preventDefault();
        setSent(form);
        start(async () => {
          const r = await create(form);
          setResult(r);
          if (r.ok && r.data) router.push(`/tenants/${r.data.slug}`);
        });
      }}
    >
      {(["slug", "name"] as const).map((f) => (
        <div key={f}>
          <label className="label" htmlFor={`new-tenant-${f}`}>
            {LABELS[f]}
          </label>
          <input id={`new-tenant-${f}`} className="input" value={form[f]} placeholder={f === "slug" ? "acme" : "Acme Inc."} onChange={(e) => setForm({ ...form, [f]: e.target.value })} aria-invalid={err(f) ? true : undefined} />
          {err(f) && <p className="field-error">{err(f)}</p>}
        </div>
      ))}
      <div>
        <label className="label" htmlFor="new-tenant-tier">
          {LABELS.tier}
        </label>
        <select id="new-tenant-tier" className="input" value={form.tier} onChange={(e) => setForm({ ...form, tier: e.target.value })}>
          {tiers.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
        {err("tier") && <p className="field-error">{err("tier")}</p>}
      </div>
      <button className="btn-primary" type="submit" disabled={pending}>
        {pending ? "Creating…" : "Create tenant"}
      </button>
      {general && (
        <p role="alert" className="col-span-full text-sm text-red-600">
          {general}
        </p>
      )}
    </form>
  );
}

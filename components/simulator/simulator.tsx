"use client";
/**
 * The simulator page's interactive part: pick a tenant or a tier, operations and traffic; run the
 * draft and the live policy side by side in the browser; chart allowed / delayed / denied.
 */
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { CompiledPolicyBody } from "@/lib/policy/compiled";
import { runSimulation, type SimulationResult, type Traffic } from "./run-simulation";

export interface SimulatorProps {
  draft: CompiledPolicyBody | null;
  draftError: string | null;
  live: { version: number; body: CompiledPolicyBody } | null;
  tiers: string[];
  tenants: { slug: string; tier: string }[];
  operations: string[];
  initialTenant: string | null;
}

const LIMITS: Record<keyof Traffic, [number, number]> = {
  ratePerSecond: [0, 5000],
  burstEverySeconds: [0, 3600],
  burstSize: [0, 10000],
  keys: [1, 1000],
  ips: [1, 1000],
  durationSeconds: [1, 3600],
  cost: [1, 1000],
};
const LABELS: Record<keyof Traffic, string> = {
  ratePerSecond: "Steady rate (requests/s)",
  burstEverySeconds: "Burst every (s, 0 = none)",
  burstSize: "Burst size (requests)",
  keys: "API keys",
  ips: "Client IPs",
  durationSeconds: "Duration (s)",
  cost: "Cost per request",
};

function validate(t: Record<keyof Traffic, string>): { traffic: Traffic | null; errors: Partial<Record<keyof Traffic, string>> } {
  const errors: Partial<Record<keyof Traffic, string>> = {};
  const out = {} as Traffic;
  for (const k of Object.keys(LIMITS) as (keyof Traffic)[]) {
    const v = Number(t[k]);
    const [min, max] = LIMITS[k];
    if (t[k].trim() === "" || !Number.isFinite(v) || v < min || v > max) errors[k] = `from ${min} to ${max}`;
    else if (k !== "ratePerSecond" && !Number.isInteger(v)) errors[k] = "a whole number";
    else out[k] = v;
  }
  if (!errors.ratePerSecond && !errors.burstSize && Number(t.ratePerSecond) === 0 && (Number(t.burstSize) === 0 || Number(t.burstEverySeconds) === 0)) {
    errors.ratePerSecond = "send some traffic: a rate, or bursts";
  }
  return { traffic: Object.keys(errors).length ? null : out, errors };
}

function pct(x: number) {
  return `${(x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 1)}%`;
}

function Summary({ r }: { r: SimulationResult }) {
  if (r.missing) return <p className="text-sm text-amber-700">Not in this version: {r.missing}.</p>;
  const items: [string, string][] = [
    ["Requests", r.total.toLocaleString("en-US")],
    ["Allowed", r.allowed.toLocaleString("en-US")],
    ["Delayed", r.delayed ? `${r.delayed.toLocaleString("en-US")} (max ${r.maxDelayMs} ms)` : "0"],
    ["Denied", r.denied.toLocaleString("en-US")],
    ["429 share", pct(r.share429)],
    ["First denial", r.firstDenialSeconds === null ? "never" : `at ${r.firstDenialSeconds.toFixed(r.firstDenialSeconds % 1 ? 2 : 0)} s`],
    ["Retry-After seen", r.firstRetryAfterSeconds === null ? "—" : `${r.firstRetryAfterSeconds} s first, ${r.maxRetryAfterSeconds} s max`],
  ];
  if (r.shadowDenied) items.push(["Shadow denials", r.shadowDenied.toLocaleString("en-US")]);
  return (
    <div>
      <dl className="grid grid-cols-2 gap-x-4 gap-y-1 text-sm">
        {items.map(([k, v]) => (
          <div key={k} className="flex justify-between gap-2 border-b border-slate-100 py-0.5">
            <dt className="text-slate-600">{k}</dt>
            <dd className="font-medium tabular-nums" data-testid={`sim-${k.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`}>
              {v}
            </dd>
          </div>
        ))}
      </dl>
      {Object.keys(r.reasons).length > 0 && (
        <p className="mt-2 text-xs text-slate-600">
          Denied because: {Object.entries(r.reasons).map(([k, v]) => `${k} × ${v.toLocaleString("en-US")}`).join(", ")}
        </p>
      )}
      {r.notes.map((n) => (
        <p key={n} className="mt-1 text-xs text-amber-700">
          {n}
        </p>
      ))}
    </div>
  );
}

function Chart({ r, title }: { r: SimulationResult; title: string }) {
  return (
    <div className="card" data-testid={`sim-chart-${title.split(" ")[0].toLowerCase()}`}>
      <h3 className="mb-2 font-semibold">{title}</h3>
      <div className="h-60">
        <ResponsiveContainer width="100%" height="100%">
          <BarChart data={r.buckets} barCategoryGap={0} margin={{ top: 4, right: 8, bottom: 4, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} />
            <XAxis dataKey="t" tickFormatter={(t: number) => `${t}s`} fontSize={11} />
            <YAxis fontSize={11} allowDecimals={false} />
            <Tooltip labelFormatter={(t) => `${t}–${Number(t) + r.bucketSeconds} s`} />
            <Legend wrapperStyle={{ fontSize: 12 }} />
            <Bar dataKey="allowed" stackId="a" fill="#16a34a" isAnimationActive={false} />
            <Bar dataKey="delayed" stackId="a" fill="#d97706" isAnimationActive={false} />
            <Bar dataKey="denied" stackId="a" fill="#dc2626" isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <p className="mb-2 text-xs text-slate-500">Requests per {r.bucketSeconds === 1 ? "second" : `${r.bucketSeconds} s`}.</p>
      <Summary r={r} />
    </div>
  );
}

export function Simulator({ draft, draftError, live, tiers, tenants, operations, initialTenant }: SimulatorProps) {
  const router = useRouter();
  const [kind, setKind] = useState<"tenant" | "tier">(initialTenant ? "tenant" : "tier");
  const [tier, setTier] = useState(tiers[0] ?? "");
  const [tenant, setTenant] = useState(initialTenant ?? tenants[0]?.slug ?? "");
  const [ops, setOps] = useState<string[]>(operations.slice(0, 1));
  const [form, setForm] = useState<Record<keyof Traffic, string>>({
    ratePerSecond: "5",
    burstEverySeconds: "0",
    burstSize: "0",
    keys: "1",
    ips: "1",
    durationSeconds: "120",
    cost: "1",
  });
  const [results, setResults] = useState<{ draft: SimulationResult | null; live: SimulationResult | null } | null>(null);
  const [progress, setProgress] = useState<string | null>(null);
  const [pending, start] = useTransition();
  const { traffic, errors } = validate(form);
  const tenantMissing = kind === "tenant" && !tenant;

  function run() {
    if (!traffic) return;
    const subject = kind === "tier" ? { kind, name: tier } : { kind, name: tenant };
    // Windows are epoch-aligned: start on a minute boundary so "the first minute" means one window.
    const startMs = Math.floor(Date.now() / 60_000) * 60_000;
    start(async () => {
      setProgress("Simulating the draft…");
      const d = draft ? await runSimulation(draft, subject, ops, traffic, { startMs, policyVersion: 0, onProgress: (a, b) => setProgress(`Draft: ${a.toLocaleString("en-US")} of ${b.toLocaleString("en-US")}`) }) : null;
      setProgress("Simulating the live version…");
      const l = live ? await runSimulation(live.body, subject, ops, traffic, { startMs, policyVersion: live.version }) : null;
      setResults({ draft: d, live: l });
      setProgress(null);
    });
  }

  return (
    <div className="flex flex-col gap-5">
      <form
        className="card grid grid-cols-1 gap-4 lg:grid-cols-3"
        onSubmit={(e) => {
          e.preventDefault();
          run();
        }}
      >
        <fieldset className="flex flex-col gap-2">
          <legend className="label">Who sends the traffic</legend>
          <div className="flex gap-4 text-sm">
            <label className="flex items-center gap-1.5">
              <input type="radio" name="subject" checked={kind === "tier"} onChange={() => setKind("tier")} /> A tier
            </label>
            <label className="flex items-center gap-1.5">
              <input type="radio" name="subject" checked={kind === "tenant"} onChange={() => setKind("tenant")} /> A tenant
            </label>
          </div>
          {kind === "tier" ? (
            <div>
              <label className="label" htmlFor="sim-tier">
                Tier
              </label>
              <select id="sim-tier" className="input" value={tier} onChange={(e) => setTier(e.target.value)}>
                {tiers.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </div>
          ) : (
            <div>
              <label className="label" htmlFor="sim-tenant">
                Tenant
              </label>
              <select
                id="sim-tenant"
                className="input"
                value={tenant}
                onChange={(e) => {
                  setTenant(e.target.value);
                  // The page sends the documents pruned to one tenant; fetch them for the new one.
                  router.replace(`/simulator?tenant=${encodeURIComponent(e.target.value)}`);
                }}
              >
                {tenants.map((t) => (
                  <option key={t.slug} value={t.slug}>
                    {t.slug} ({t.tier})
                  </option>
                ))}
              </select>
            </div>
          )}
          <div>
            <span className="label" id="sim-ops-label">
              Operations (requests rotate over them)
            </span>
            <div className="flex max-h-40 flex-col gap-1 overflow-auto rounded-md border border-slate-200 p-2 text-sm" role="group" aria-labelledby="sim-ops-label">
              {operations.length === 0 && <span className="text-slate-500">No operations: requests match only * limits.</span>}
              {operations.map((o) => (
                <label key={o} className="flex items-center gap-1.5">
                  <input type="checkbox" checked={ops.includes(o)} onChange={(e) => setOps(e.target.checked ? [...ops, o] : ops.filter((x) => x !== o))} />
                  <span className="font-mono text-xs">{o}</span>
                </label>
              ))}
            </div>
          </div>
        </fieldset>
        <fieldset className="grid grid-cols-2 gap-3 lg:col-span-2">
          <legend className="label">Traffic</legend>
          {(Object.keys(LABELS) as (keyof Traffic)[]).map((k) => (
            <div key={k}>
              <label className="label" htmlFor={`sim-${k}`}>
                {LABELS[k]}
              </label>
              <input
                id={`sim-${k}`}
                type="number"
                className="input"
                min={LIMITS[k][0]}
                max={LIMITS[k][1]}
                step={k === "ratePerSecond" ? "any" : 1}
                value={form[k]}
                aria-invalid={errors[k] ? true : undefined}
                onChange={(e) => setForm({ ...form, [k]: e.target.value })}
              />
              {errors[k] && <p className="field-error">{errors[k]}</p>}
            </div>
          ))}
          <div className="col-span-2 flex items-center gap-3">
            <button type="submit" className="btn-primary" disabled={pending || !traffic || tenantMissing || (!draft && !live)}>
              {pending ? "Simulating…" : "Run simulation"}
            </button>
            {progress && (
              <span className="text-sm text-slate-600" role="status">
                {progress}
              </span>
            )}
          </div>
        </fieldset>
      </form>
      {draftError && <p className="rounded bg-red-50 px-3 py-2 text-sm text-red-700">The draft does not compile, so only the live version is simulated: {draftError}</p>}
      {!results ? (
        <div className="rounded-lg border border-dashed border-slate-300 bg-white px-6 py-8 text-center text-sm text-slate-600">
          Describe the traffic and run it: the draft and the live policy are evaluated side by side, in your browser, with the same algorithms the decision server runs.
        </div>
      ) : (
        <div className="grid grid-cols-1 gap-4 lg:grid-cols-2" data-testid="sim-results">
          {results.draft ? <Chart r={results.draft} title="Draft" /> : <div className="card text-sm text-slate-600">No draft to simulate.</div>}
          {results.live ? <Chart r={results.live} title={`Live v${live?.version}`} /> : <div className="card text-sm text-slate-600">Nothing is published yet: there is no live policy to compare with.</div>}
        </div>
      )}
    </div>
  );
}
